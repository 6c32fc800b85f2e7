import { createStack, defineTool, type Logger, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type IdempotencyStore, idempotency, memoryIdempotencyStore } from './index.js'

/** A logger whose `level` method throws, as a broken transport would. */
function throwingLogger(level: 'info' | 'warn'): Logger {
  const logger: Logger = {
    debug() {},
    info() {},
    warn() {},
    error() {},
    child: () => logger,
  }
  logger[level] = () => {
    throw new Error(`logger ${level} transport is down`)
  }
  return logger
}

/** A store that answers later, over `inner`, whose `complete` rejects. */
function failingCompleteStore(inner: IdempotencyStore): IdempotencyStore {
  return {
    begin: async (...args) => inner.begin(...args),
    complete: async () => {
      throw new Error('connection reset while storing the result')
    },
    release: async (...args) => inner.release(...args),
    markUnknown: async (...args) => inner.markUnknown(...args),
  }
}

const args = { amount: 5 }
const call = (id: string) => ({ id, name: 'charge_card', args })

/** The write tool every test calls, with the body the test gives it. */
function chargeCard(execute: (args: { amount: number }) => unknown) {
  return defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ amount: z.number() }),
    effect: 'write',
    execute,
  })
}

/** A write tool that counts its runs; each run waits until the test lets it answer. */
function gatedCharge() {
  let runs = 0
  const gates: Array<() => void> = []
  const tool = chargeCard(async () => {
    runs++
    await new Promise<void>((resolve) => gates.push(resolve))
    return { chargeId: `ch_${runs}` }
  })
  const open = async () => {
    while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve))
    gates.shift()?.()
  }
  return { tool, runs: () => runs, open }
}

describe('idempotency: the lead of a key always lets it go', () => {
  it('answers a success whose result a store that answers later failed to keep, and the duplicate waiting on it replays it', async () => {
    const { tool, runs, open } = gatedCharge()
    const store = failingCompleteStore(memoryIdempotencyStore())
    const stack = createStack({ tools: [tool], logger: throwingLogger('warn'), middleware: [idempotency({ store })] })
    const first = stack.dispatch(call('c1'))
    await open()
    const duplicate = stack.dispatch(call('c2'))
    const [a, b] = await Promise.all([first, duplicate])
    expect(runs()).toBe(1)
    expect(a).toMatchObject({ ok: true, value: { chargeId: 'ch_1' } })
    expect(a.trace.map((e) => e.type)).toEqual(['idempotency.store_error'])
    expect(b).toMatchObject({ ok: true, value: { chargeId: 'ch_1' }, replayed: true })
    expect(b.trace).toMatchObject([
      { type: 'idempotency.waiting', where: 'in_process' },
      { type: 'idempotency.replayed', from: 'in_process' },
    ])
    // The key was let go in this process: a later identical call goes to the store, which still holds the claim.
    const later = await createStack({ tools: [tool], middleware: [idempotency({ store, waitMs: 0 })] }).dispatch(call('c3'))
    expect(later.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('still in progress elsewhere (waited 0 ms)') })
    expect(runs()).toBe(1)
  })

  it('answers with the tool’s own error when the logger throws while the outcome is recorded as unknown', async () => {
    const tool = chargeCard(() => {
      throw new ToolError('timeout', 'charge_card did not answer within 5 s')
    })
    const stack = createStack({ tools: [tool], logger: throwingLogger('warn'), middleware: [idempotency()] })
    const first = await stack.dispatch(call('c1'))
    expect(first.error).toMatchObject({ code: 'timeout' })
    expect(first.trace.map((e) => e.type)).toEqual(['idempotency.outcome_unknown'])
    const again = await stack.dispatch(call('c2'))
    expect(again.error).toMatchObject({ code: 'outcome_unknown' })
  })

  it('lets a duplicate waiting on a leader that replays from the store replay too, the logger throwing on every replay', async () => {
    const { tool, runs, open } = gatedCharge()
    const store = memoryIdempotencyStore()
    const stored = createStack({ tools: [tool], middleware: [idempotency({ store })] }).dispatch(call('c1'))
    await open()
    expect((await stored).value).toEqual({ chargeId: 'ch_1' })
    // A store that answers later: the leader's claim is pending when the duplicate arrives.
    const later = { ...store, begin: async (...a: Parameters<typeof store.begin>) => store.begin(...a) }
    const loud = createStack({ tools: [tool], logger: throwingLogger('info'), middleware: [idempotency({ store: later })] })
    const [a, b] = await Promise.all([loud.dispatch(call('c2')), loud.dispatch(call('c3'))])
    expect(runs()).toBe(1)
    expect(a).toMatchObject({ ok: true, value: { chargeId: 'ch_1' }, replayed: true })
    expect(a.trace).toMatchObject([{ type: 'idempotency.replayed', from: 'store' }])
    expect(b).toMatchObject({ ok: true, value: { chargeId: 'ch_1' }, replayed: true })
    expect(b.trace).toMatchObject([{ type: 'idempotency.waiting' }, { type: 'idempotency.replayed', from: 'in_process' }])
  })
})

describe('idempotency: the time of the stored event', () => {
  const charge = chargeCard(({ amount }) => ({ charged: amount }))

  it('is the stack clock’s reading, the one the record’s expiry is counted from, when the store reads that clock too', async () => {
    const clock = manualClock(5_000)
    const store = memoryIdempotencyStore({ now: clock.now })
    const stack = createStack({ clock, tools: [charge], middleware: [idempotency({ store, ttlMs: 1_000 })] })
    const result = await stack.dispatch(call('c1'))
    expect(result.trace).toEqual([{ type: 'idempotency.stored', key: expect.any(String), op: 'complete', at: 5_000 }])
    await clock.advance(999)
    expect(await stack.dispatch(call('c2'))).toMatchObject({ replayed: true })
    await clock.advance(1)
    expect(await stack.dispatch(call('c3'))).toMatchObject({ ok: true, replayed: false })
  })

  it('is the stack clock’s reading when the store keeps a clock of its own', async () => {
    const stackClock = manualClock(7)
    const storeClock = manualClock(1_000_000)
    const store = memoryIdempotencyStore({ now: storeClock.now })
    const stack = createStack({ clock: stackClock, tools: [charge], middleware: [idempotency({ store, ttlMs: 1_000 })] })
    const result = await stack.dispatch(call('c1'))
    expect(result.trace).toMatchObject([{ type: 'idempotency.stored', at: 7 }])
    // The record's expiry follows the store's clock, not the stack's.
    await stackClock.advance(10_000)
    expect(await stack.dispatch(call('c2'))).toMatchObject({ replayed: true })
    await storeClock.advance(1_000)
    expect(await stack.dispatch(call('c3'))).toMatchObject({ ok: true, replayed: false })
  })
})
