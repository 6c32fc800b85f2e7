import { createStack, defineTool, LoopError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type IdempotencyStore, idempotency, memoryIdempotencyStore } from './index.js'

/** A write tool whose executions wait at a gate the test opens. */
function gatedTool(outcomes: Array<() => unknown> = []) {
  let runs = 0
  let open!: () => void
  let gate = new Promise<void>((resolve) => {
    open = resolve
  })
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ card: z.string(), amount: z.number(), orderRef: z.string().optional() }),
    execute: async () => {
      const n = ++runs
      await gate
      const outcome = outcomes[n - 1]?.()
      return outcome === undefined ? { chargeId: `ch_${n}` } : outcome
    },
  })
  return {
    tool,
    runs: () => runs,
    open: () => open(),
    reset: () => {
      gate = new Promise<void>((resolve) => {
        open = resolve
      })
    },
  }
}

/** The same records under another object identity: what a second process sharing one database looks like. */
function otherProcess(store: IdempotencyStore): IdempotencyStore {
  return {
    begin: (...a) => store.begin(...a),
    complete: (...a) => store.complete(...a),
    release: (...a) => store.release(...a),
    markUnknown: (...a) => store.markUnknown(...a),
  }
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve))
const call = (args: unknown = { card: 'c1', amount: 5 }, id = 'c') => ({ id, name: 'charge_card', args })

describe('idempotency: duplicates in one process', () => {
  it('runs the tool once for 50 concurrent identical write calls; the other 49 get its result', async () => {
    const { tool, runs, open } = gatedTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const pending = Array.from({ length: 50 }, (_, i) => stack.dispatch(call(undefined, `c${i}`)))
    await flush()
    open()
    const results = await Promise.all(pending)
    expect(runs()).toBe(1)
    expect(results.every((r) => r.ok)).toBe(true)
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    expect(new Set(results.map((r) => JSON.stringify(r.value)))).toEqual(new Set(['{"chargeId":"ch_1"}']))
    expect(results[1]?.trace.map((e) => e.type)).toEqual(['idempotency.waiting', 'idempotency.replayed'])
    expect(results[1]?.trace[1]).toMatchObject({ from: 'in_process' })
  })

  it('lets exactly one waiter run when the first call failed safely, and the rest replay that run', async () => {
    const { tool, runs, open } = gatedTool([
      () => {
        throw new ToolError('rate_limited', '429', { safeToRepeat: true })
      },
    ])
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const pending = Array.from({ length: 10 }, (_, i) => stack.dispatch(call(undefined, `c${i}`)))
    await flush()
    open()
    const results = await Promise.all(pending)
    expect(runs()).toBe(2)
    expect(results[0]?.error?.code).toBe('rate_limited')
    expect(results.slice(1).filter((r) => r.ok && !r.replayed)).toHaveLength(1)
    expect(results.slice(1).every((r) => r.ok)).toBe(true)
  })

  it('refuses every waiter as outcome_unknown when the first call timed out', async () => {
    const { tool, runs, open } = gatedTool([
      () => {
        throw new ToolError('timeout', 'timed out')
      },
    ])
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const pending = Array.from({ length: 5 }, (_, i) => stack.dispatch(call(undefined, `c${i}`)))
    await flush()
    open()
    const results = await Promise.all(pending)
    expect(runs()).toBe(1)
    expect(results.map((r) => r.error?.code)).toEqual([
      'timeout',
      'outcome_unknown',
      'outcome_unknown',
      'outcome_unknown',
      'outcome_unknown',
    ])
  })

  it('does not hand a waiter with the same explicit key but other arguments the first call’s result', async () => {
    const { tool, runs, open } = gatedTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency({ keyFrom: 'orderRef' })] })
    const first = stack.dispatch(call({ card: 'c1', amount: 5, orderRef: 'o-1' }))
    const other = stack.dispatch(call({ card: 'c1', amount: 9, orderRef: 'o-1' }))
    await flush()
    open()
    expect((await first).ok).toBe(true)
    expect((await other).error?.code).toBe('idempotency_mismatch')
    expect(runs()).toBe(1)
  })

  it('waits across two stacks of one process that share a store', async () => {
    const { tool, runs, open } = gatedTool()
    const store = memoryIdempotencyStore()
    const a = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    const b = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    const results = [a.dispatch(call()), b.dispatch(call())]
    await flush()
    open()
    expect((await Promise.all(results)).map((r) => r.replayed)).toEqual([false, true])
    expect(runs()).toBe(1)
  })

  it('stops a waiter as soon as its call is cancelled, without disturbing the running call', async () => {
    const { tool, runs, open } = gatedTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const first = stack.dispatch(call())
    const controller = new AbortController()
    const waiter = stack.dispatch(call(), { signal: controller.signal })
    await flush()
    controller.abort(new LoopError('cancelled', 'stop'))
    await expect(waiter).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    open()
    expect(await first).toMatchObject({ ok: true, replayed: false })
    expect(runs()).toBe(1)
  })
})

describe('idempotency: duplicates across processes (manual clock)', () => {
  function twoProcesses(options: { waitMs?: number; pollMs?: number; leaseMs?: number } = {}) {
    const clock = manualClock()
    const gated = gatedTool()
    const store = memoryIdempotencyStore({ now: clock.now })
    const a = createStack({ clock, tools: [gated.tool], middleware: [idempotency({ store, ...options })] })
    const b = createStack({ clock, tools: [gated.tool], middleware: [idempotency({ store: otherProcess(store), ...options })] })
    return { clock, ...gated, a, b }
  }

  it('polls the store while the other process runs the call, then replays its result', async () => {
    const { clock, a, b, open, runs } = twoProcesses({ pollMs: 100 })
    const first = a.dispatch(call())
    const second = b.dispatch(call())
    await clock.advance(250)
    open()
    await clock.advance(100)
    expect(await first).toMatchObject({ ok: true, replayed: false })
    const replayed = await second
    expect(replayed).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1' } })
    expect(replayed.trace.map((e) => e.type)).toEqual(['idempotency.waiting', 'idempotency.replayed'])
    expect(replayed.trace[0]).toMatchObject({ where: 'store' })
    expect(runs()).toBe(1)
  })

  it('gives up after waitMs with a soft conflict, and the tool ran once', async () => {
    const { clock, a, b, open, runs } = twoProcesses({ waitMs: 1000, pollMs: 300 })
    const first = a.dispatch(call())
    const second = b.dispatch(call())
    await clock.advance(999)
    expect(clock.pending).toBe(1)
    await clock.advance(1)
    const refused = await second
    expect(refused.error).toMatchObject({ code: 'conflict', category: 'transient', safeToRepeat: true })
    expect(refused.content).toContain('still in progress')
    open()
    await first
    expect(runs()).toBe(1)
  })

  it('refuses every in-process duplicate behind the polling call at once after waitMs, not one waitMs each', async () => {
    const { clock, a, b, open, runs } = twoProcesses({ waitMs: 1000, pollMs: 250 })
    const first = a.dispatch(call())
    const duplicates = Array.from({ length: 5 }, (_, i) => b.dispatch(call(undefined, `b${i}`)))
    await clock.advance(1000)
    const settled = await Promise.race([Promise.all(duplicates), new Promise((resolve) => setImmediate(() => resolve('still waiting')))])
    expect(settled).not.toBe('still waiting')
    const results = await Promise.all(duplicates)
    expect(results.map((r) => r.error?.code)).toEqual(['conflict', 'conflict', 'conflict', 'conflict', 'conflict'])
    expect(results[1]?.trace.map((e) => e.type)).toEqual(['idempotency.waiting', 'idempotency.refused'])
    open()
    await first
    expect(runs()).toBe(1)
  })

  it('answers outcome_unknown once the other worker’s lease ran out without a word', async () => {
    const { clock, a, b, runs } = twoProcesses({ pollMs: 100, waitMs: 10_000, leaseMs: 500 })
    void a.dispatch(call()) // never answers: the worker "crashed" while holding the key
    const second = b.dispatch(call())
    await clock.advance(400)
    expect(clock.pending).toBe(1)
    await clock.advance(100)
    expect((await second).error).toMatchObject({ code: 'outcome_unknown' })
    expect((await second).content).toContain('its worker stopped before reporting back')
    expect(runs()).toBe(1)
  })

  it('stops polling at once when the run is cancelled, leaving no sleeper behind', async () => {
    const { clock, a, b, open } = twoProcesses({ pollMs: 100 })
    const first = a.dispatch(call())
    const controller = new AbortController()
    const second = b.dispatch(call(), { signal: controller.signal })
    await clock.advance(50)
    expect(clock.pending).toBe(1)
    controller.abort(new LoopError('cancelled', 'stop'))
    await expect(second).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(clock.pending).toBe(0)
    open()
    await first
  })
})
