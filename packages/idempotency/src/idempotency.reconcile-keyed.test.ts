import { createRun, createStack, defineTool, type ReconcileAnswer, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { idempotency, memoryIdempotencyStore } from './index.js'

/**
 * A refund that forwards the call's key upstream, so the service answers a repeat of a landed request from its
 * first result (`effect: 'idempotent'`), with a `reconcile` that asks the service's lookup endpoint.
 */
function keyedRefund(behave: (n: number) => unknown, lookup: (n: number) => ReconcileAnswer) {
  const seen = { runs: 0, asked: 0, keys: [] as Array<string | undefined> }
  const tool = defineTool({
    name: 'refund_payment',
    description: 'Refund a payment',
    input: z.object({ payment: z.string(), amountCents: z.number() }),
    effect: 'idempotent',
    execute: async (_args, { idempotencyKey }) => {
      seen.keys.push(idempotencyKey)
      return behave(++seen.runs)
    },
    reconcile: (_args, { idempotencyKey }) => {
      seen.keys.push(idempotencyKey)
      return lookup(++seen.asked)
    },
  })
  return { tool, seen }
}

const timedOut = () => new ToolError('timeout', 'refund_payment timed out after 30 s', { category: 'transient' })
const types = (trace: ReadonlyArray<{ type: string }>) => trace.map((e) => e.type).filter((t) => t.startsWith('idempotency.'))

function setup(behave: (n: number) => unknown, lookup: (n: number) => ReconcileAnswer) {
  const clock = manualClock()
  const { tool, seen } = keyedRefund(behave, lookup)
  const layer = idempotency({ store: memoryIdempotencyStore({ now: clock.now }), reconcileDelayMs: 100, reconcileTimeoutMs: 1000 })
  const stack = createStack({ clock, tools: [tool], middleware: [layer] })
  const run = createRun({ id: 'run-1' })
  const dispatch = async (id: string) => {
    const pending = stack.dispatch({ id, name: 'refund_payment', args: { payment: 'pi_1', amountCents: 4200 } }, { run })
    let done = false
    void pending.then(
      () => (done = true),
      () => (done = true),
    )
    for (let i = 0; i < 100 && !done; i++) await clock.advance(1000)
    return pending
  }
  return { seen, dispatch }
}

describe('idempotency: a keyed write (idempotent) whose outcome is open is reconciled too', () => {
  it('completes with what the lookup found when the refund landed and then timed out: no dead end, no second refund', async () => {
    const { seen, dispatch } = setup(
      () => {
        throw timedOut()
      },
      () => ({ status: 'applied', result: { refund: 're_1' } }),
    )
    const first = await dispatch('c1')
    expect(first).toMatchObject({ ok: true, value: { refund: 're_1' } })
    expect(types(first.trace)).toEqual(['idempotency.reconcile_attempt', 'idempotency.reconciled', 'idempotency.stored'])
    expect(await dispatch('c2')).toMatchObject({ ok: true, replayed: true, value: { refund: 're_1' } })
    expect(seen).toMatchObject({ runs: 1, asked: 1 })
    expect(new Set(seen.keys).size).toBe(1)
  })

  it('says repeating is safe when the lookup found nothing, and the repeat goes upstream under the same key', async () => {
    const { seen, dispatch } = setup(
      (n) => {
        if (n === 1) throw timedOut()
        return { refund: 're_2' }
      },
      () => ({ status: 'not_applied' }),
    )
    const first = await dispatch('c1')
    expect(first.error).toMatchObject({ code: 'timeout', safeToRepeat: true })
    expect(first.error?.hint).toBe('checked: it did not take effect, so repeating the identical call is safe')
    expect(await dispatch('c2')).toMatchObject({ ok: true, value: { refund: 're_2' } })
    expect(seen.runs).toBe(2)
    expect(new Set(seen.keys).size).toBe(1)
  })

  it('when the lookup cannot tell, leaves the record free and says the same key makes the repeat safe; the repeat is sent', async () => {
    const { seen, dispatch } = setup(
      (n) => {
        if (n === 1) throw timedOut()
        return { refund: 're_1' }
      },
      () => ({ status: 'unknown' }),
    )
    const first = await dispatch('c1')
    expect(first.error).toMatchObject({ code: 'timeout', retryable: false })
    expect(first.error?.hint).toMatch(/could not tell.*repeating the identical call is safe: it carries the same idempotency key/)
    expect(first.error?.hint).toMatch(/do not change the arguments/)
    expect(first.error?.hint).not.toMatch(/look it up/i)
    expect(types(first.trace)).toContain('idempotency.released')
    expect(types(first.trace)).not.toContain('idempotency.outcome_unknown')
    expect(await dispatch('c2')).toMatchObject({ ok: true, value: { refund: 're_1' } })
    expect(seen).toMatchObject({ runs: 2, asked: 3 })
  })

  it('does not ask when the failure proves nothing happened (a 429 refused at the door)', async () => {
    const { seen, dispatch } = setup(
      () => {
        throw new ToolError('rate_limited', 'HTTP 429', { category: 'transient', safeToRepeat: true })
      },
      () => ({ status: 'applied', result: 'never' }),
    )
    expect((await dispatch('c1')).error?.code).toBe('rate_limited')
    expect(seen.asked).toBe(0)
  })
})
