import { createRun, createStack, defineTool, type Middleware, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { stuckLoop } from '@shallot/stuck-loop'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

/** A charge whose currency defaults to usd, and a zod transform that trims the card: two spellings, one call. */
function chargeWorld(outcome: 'ok' | 'decline') {
  const charged: unknown[] = []
  let parses = 0
  const input = z.object({ card: z.string(), amount: z.number(), currency: z.string().default('usd') }).transform((args) => {
    parses++
    return { ...args, card: args.card.trim() }
  })
  const charge = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input,
    effect: 'write',
    execute: (args) => {
      charged.push(args)
      if (outcome === 'decline')
        throw new ToolError('card_declined', 'the card was declined', { category: 'recoverable', retryable: false })
      return { chargeId: `ch_${charged.length}` }
    },
  })
  return { charge, charged, parses: () => parses }
}

const seen: Middleware = async (ctx, next) => {
  fingerprints.push(ctx.fingerprint)
  await next()
}
let fingerprints: string[] = []

describe('one identity of a call', () => {
  it('is the same call to stuck-loop and to idempotency: { amount: 5 } and { amount: 5, currency: "usd" }', async () => {
    fingerprints = []
    // Idempotency: the second spelling replays the first charge instead of charging again.
    const paid = chargeWorld('ok')
    const payments = createStack({ tools: [paid.charge], middleware: [seen, idempotency()] })
    const run = createRun({ id: 'run-1' })
    const first = await payments.dispatch({ id: 'a', name: 'charge_card', args: { card: 'c1', amount: 5 } }, { run })
    const second = await payments.dispatch({ id: 'b', name: 'charge_card', args: { card: ' c1 ', amount: 5, currency: 'usd' } }, { run })
    expect([first.replayed, second.replayed, paid.charged.length]).toEqual([false, true, 1])
    expect(second.value).toEqual(first.value)

    // Stuck-loop: the same two spellings count as one repeated call, so the second failure refuses the third.
    const declined = chargeWorld('decline')
    const loop = createStack({ tools: [declined.charge], middleware: [seen, stuckLoop({ refuseAfter: 2 })] })
    const loopRun = createRun()
    await loop.dispatch({ id: 'c', name: 'charge_card', args: { card: 'c1', amount: 5 } }, { run: loopRun })
    await loop.dispatch({ id: 'd', name: 'charge_card', args: { card: ' c1 ', amount: 5, currency: 'usd' } }, { run: loopRun })
    const third = await loop.dispatch({ id: 'e', name: 'charge_card', args: { amount: 5, card: 'c1' } }, { run: loopRun })
    expect(third.error?.code).toBe('repeated_failure')
    expect(declined.charged).toHaveLength(2)

    // Both layers read one fingerprint for the five calls, and it differs for another amount.
    expect(new Set(fingerprints).size).toBe(1)
    const other = await loop.dispatch({ id: 'f', name: 'charge_card', args: { card: 'c1', amount: 6 } }, { run: loopRun })
    expect(other.error?.code).toBe('card_declined')
    expect(new Set(fingerprints).size).toBe(2)
  })

  it('parses the arguments once per call, however many layers read them', async () => {
    fingerprints = []
    const { charge, parses } = chargeWorld('ok')
    const stack = createStack({ tools: [charge], middleware: [seen, stuckLoop(), idempotency()] })
    const run = createRun()
    for (let n = 1; n <= 3; n++) await stack.dispatch({ id: `p${n}`, name: 'charge_card', args: { card: `c${n}`, amount: n } }, { run })
    expect(parses()).toBe(3)
  })

  it('identifies unparseable arguments by the raw ones, so stuck-loop still sees a model repeating them', async () => {
    const { charge, charged } = chargeWorld('ok')
    const stack = createStack({ tools: [charge], middleware: [stuckLoop({ refuseAfter: 2 }), idempotency()] })
    const run = createRun()
    const bad = { id: 'x', name: 'charge_card', args: { card: 'c1', amount: 'five' } }
    const codes: unknown[] = []
    for (let n = 0; n < 3; n++) codes.push((await stack.dispatch(bad, { run })).error?.code)
    expect(codes).toEqual(['invalid_arguments', 'invalid_arguments', 'repeated_failure'])
    expect(charged).toHaveLength(0)
  })
})
