import { type AnyTool, silentLogger } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { demoTools } from './tools.js'

const context = (signal: AbortSignal, idempotencyKey: string | undefined) => ({
  call: { id: 'c1', name: 'charge_card', args: {} },
  signal,
  idempotencyKey,
  attempt: 1,
  log: silentLogger,
})

function refund() {
  const clock = manualClock()
  const { tools, charges } = demoTools(clock, new Map())
  const charge: AnyTool | undefined = tools.find((t) => t.name === 'charge_card')
  if (charge?.reconcile === undefined) throw new Error('charge_card has no reconcile')
  return { clock, charges, charge, reconcile: charge.reconcile }
}

describe("the demo's refund and the payment provider's lookup", () => {
  it('answers not_applied for a key the provider never saw, and applied with the charge once it landed', async () => {
    const { clock, charge, reconcile, charges } = refund()
    const args = { order: 'ORD-2026-00042', amountCents: -4200 }
    const before = reconcile(args, context(new AbortController().signal, 'k1'))
    await clock.runAll()
    await expect(before).resolves.toEqual({ status: 'not_applied' })
    const attempt = new AbortController()
    const landing = Promise.resolve(charge.execute(args, context(attempt.signal, 'k1')))
    attempt.abort(new Error('timed out'))
    await expect(landing).rejects.toThrow('timed out')
    const after = reconcile(args, context(new AbortController().signal, 'k1'))
    await clock.runAll()
    await expect(after).resolves.toEqual({ status: 'applied', result: { id: 're_1', order: 'ORD-2026-00042', amountCents: -4200 } })
    // Another key is another charge: the lookup does not answer for it.
    const other = reconcile(args, context(new AbortController().signal, 'k2'))
    await clock.runAll()
    await expect(other).resolves.toEqual({ status: 'not_applied' })
    expect(charges).toEqual(['ORD-2026-00042:-4200'])
  })

  it('stops looking when the call is cancelled, instead of guessing an answer', async () => {
    const { reconcile } = refund()
    const cancel = new AbortController()
    const asked = reconcile({ order: 'ORD-2026-00042', amountCents: -4200 }, context(cancel.signal, 'k1'))
    cancel.abort(new Error('run cancelled'))
    await expect(asked).rejects.toThrow('run cancelled')
  })
})
