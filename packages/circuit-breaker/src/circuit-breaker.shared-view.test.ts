// A shared store seen through this worker's view: what a call to a closed circuit asks the store
// (nothing, for storeRefreshMs), what a failure writes (at once), what the successes write (later, in
// one batch), and what a store that lies, hangs or fails does to calls.
import { createStack, defineTool, LoopError, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerState, type BreakerStore, circuitBreaker, consecutive, memoryBreakerStore, sampling } from './index.js'

/** A shared store in memory that counts what it is asked: `get` (a plain read) and `update` (a write). */
function countingStore() {
  const shared = memoryBreakerStore()
  const asked = { get: 0, update: 0 }
  const store: BreakerStore = {
    get: async (key) => {
      asked.get++
      return shared.get(key)
    },
    update: async (key, change) => {
      asked.update++
      return shared.update(key, change)
    },
  }
  return { shared, asked, store }
}

/** A worker: its own layer (so its own view) on the shared store, a tool it can make fail, and a clock it shares. */
function worker(store: BreakerStore, clock = manualClock(), options: Parameters<typeof circuitBreaker>[0] = {}) {
  let failing = false
  let runs = 0
  const tool = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ tenant: z.string().optional() }),
    effect: 'read',
    execute: () => {
      runs++
      if (failing) throw new ToolError('upstream_error', 'upstream answered 503')
      return 'hit'
    },
  })
  const breaker = circuitBreaker({ store, policy: consecutive({ threshold: 2 }), cooldownMs: 30_000, ...options })
  const stack = createStack({ middleware: [breaker], tools: [tool], clock })
  let serial = 0
  const call = (args: { tenant?: string } = {}, signal?: AbortSignal): Promise<ToolResult> =>
    stack.dispatch({ id: `c${++serial}`, name: 'search', args }, signal === undefined ? {} : { signal })
  return {
    clock,
    call,
    fail: (on: boolean) => {
      failing = on
    },
    get runs() {
      return runs
    },
  }
}

const openState: BreakerState = {
  circuit: 'open',
  generation: 1,
  counts: { failures: 0 },
  failures: 2,
  openedAt: 0,
  openMs: 30_000,
  opens: 1,
  probes: [],
  seq: 0,
}

describe('circuitBreaker with a shared store: the view of a closed circuit', () => {
  it('asks the store nothing for storeRefreshMs after it read the circuit closed, then reads it once (a read, no write)', async () => {
    const { store, asked } = countingStore()
    const w = worker(store)
    expect(await w.call()).toMatchObject({ ok: true })
    expect(asked).toEqual({ get: 1, update: 0 })
    for (let i = 0; i < 50; i++) expect(await w.call()).toMatchObject({ ok: true })
    await w.clock.advance(999)
    expect(await w.call()).toMatchObject({ ok: true })
    expect(asked).toEqual({ get: 1, update: 0 })
    await w.clock.advance(1)
    expect(await w.call()).toMatchObject({ ok: true })
    expect(asked).toEqual({ get: 2, update: 0 })
  })

  it('writes a failure at once, so two workers open the circuit together', async () => {
    const { store, asked, shared } = countingStore()
    const clock = manualClock()
    const [a, b] = [worker(store, clock), worker(store, clock)]
    a.fail(true)
    b.fail(true)
    expect(await a.call()).toMatchObject({ error: { code: 'upstream_error' } })
    expect(await b.call()).toMatchObject({ error: { code: 'upstream_error' } })
    expect(shared.peek('search')?.circuit).toBe('open')
    expect(asked.update).toBe(2)
  })

  it('stops a worker whose view is stale at its first call storeRefreshMs after its last read, however many calls it made meanwhile', async () => {
    const { store } = countingStore()
    const clock = manualClock()
    const [a, b] = [worker(store, clock), worker(store, clock)]
    expect(await b.call()).toMatchObject({ ok: true }) // b read the circuit closed at 0
    await clock.advance(400)
    a.fail(true)
    for (let i = 0; i < 2; i++) await a.call()
    const openedAt = clock.now()
    // b runs calls against the opened circuit until its view is storeRefreshMs old: the staleness this buys.
    let refusedAt: number | undefined
    let ranAfterOpening = 0
    for (let t = 0; t <= 2000 && refusedAt === undefined; t += 50) {
      const r = await b.call()
      if (r.error?.code === 'circuit_open') refusedAt = clock.now()
      else ranAfterOpening++
      await clock.advance(50)
    }
    expect(refusedAt).toBe(1000)
    expect(refusedAt === undefined ? Number.NaN : refusedAt - openedAt).toBeLessThanOrEqual(1000)
    expect(ranAfterOpening).toBe(12) // at 400, 450, …, 950
  })

  it('with storeRefreshMs 0 asks the store on every call, as before the view existed', async () => {
    const { store, asked } = countingStore()
    const w = worker(store, manualClock(), { storeRefreshMs: 0 })
    for (let i = 0; i < 3; i++) expect(await w.call()).toMatchObject({ ok: true })
    expect(asked).toEqual({ get: 0, update: 6 })
  })

  it('lets 50 parallel calls on a stale view share one read', async () => {
    const { store, asked } = countingStore()
    const w = worker(store)
    await w.call()
    await w.clock.advance(1000)
    const results = await Promise.all(Array.from({ length: 50 }, () => w.call()))
    expect(results.every((r) => r.ok)).toBe(true)
    expect(asked).toEqual({ get: 2, update: 0 })
  })

  it('holds the success after a failure and writes it with the next read, which resets the fleet’s count', async () => {
    const { store, asked, shared } = countingStore()
    const w = worker(store)
    w.fail(true)
    await w.call()
    expect(shared.peek('search')?.counts).toEqual({ failures: 1 })
    w.fail(false)
    expect(await w.call()).toMatchObject({ ok: true })
    expect(shared.peek('search')?.counts).toEqual({ failures: 1 })
    await w.clock.advance(1000)
    await w.call()
    expect(shared.peek('search')?.counts).toEqual({ failures: 0 })
    expect(asked).toEqual({ get: 1, update: 2 })
  })

  it('carries the held successes of a sampling breaker to the store in one write per storeRefreshMs', async () => {
    const { store, asked, shared } = countingStore()
    const w = worker(store, manualClock(), { policy: sampling({ failureRatio: 0.5, minimumThroughput: 10, windowMs: 60_000 }) })
    for (let i = 0; i < 30; i++) await w.call()
    expect(asked).toEqual({ get: 1, update: 0 })
    await w.clock.advance(1000)
    await w.call()
    expect(asked).toEqual({ get: 1, update: 1 })
    const counts = shared.peek('search')?.counts as { buckets: [number, number, number][] } | undefined
    expect(counts?.buckets.reduce((n, [, ok]) => n + ok, 0)).toBe(30)
  })

  it('writes the held successes once 1000 wait, however fresh the view', async () => {
    const { store, asked } = countingStore()
    const w = worker(store, manualClock(), { policy: sampling() })
    for (let i = 0; i < 1001; i++) await w.call()
    expect(asked).toEqual({ get: 1, update: 1 })
  })

  it('keeps tenants apart: one tenant’s opening is never another’s', async () => {
    const { store, shared } = countingStore()
    const key = (ctx: unknown) => `search:${(ctx as { call: { args: { tenant: string } } }).call.args.tenant}`
    const clock = manualClock()
    const [a, b] = [worker(store, clock, { key }), worker(store, clock, { key })]
    await b.call({ tenant: 'acme' })
    a.fail(true)
    for (let i = 0; i < 2; i++) await a.call({ tenant: 'globex' })
    expect(shared.peek('search:globex')?.circuit).toBe('open')
    await clock.advance(5000)
    expect(await b.call({ tenant: 'acme' })).toMatchObject({ ok: true })
    expect(await b.call({ tenant: 'globex' })).toMatchObject({ error: { code: 'circuit_open' } })
    expect(shared.peek('search:acme')).toBeUndefined()
  })

  it('never trusts a view read on a clock ahead of this call’s: one layer shared by stacks on different clocks', async () => {
    const { store, asked, shared } = countingStore()
    const layer = circuitBreaker({ store, policy: consecutive({ threshold: 2 }) })
    const tool = defineTool({ name: 'search', description: 'Search', input: z.object({}), effect: 'read', execute: () => 'hit' })
    const ahead = createStack({ middleware: [layer], tools: [tool], clock: manualClock(10_000_000) })
    const behind = createStack({ middleware: [layer], tools: [tool], clock: manualClock(0) })
    await ahead.dispatch({ id: 'a', name: 'search', args: {} })
    for (let i = 0; i < 3; i++) await behind.dispatch({ id: `b${i}`, name: 'search', args: {} })
    expect(asked.get).toBe(4)
    // Each of those reads decides its own calls: an opening is seen by the next one.
    shared.set('search', openState)
    expect(await behind.dispatch({ id: 'b3', name: 'search', args: {} })).toMatchObject({ error: { code: 'circuit_open' } })
  })
})

describe('circuitBreaker with a shared store that lies, hangs or fails', () => {
  const open: BreakerState = {
    circuit: 'open',
    generation: 3,
    counts: { failures: 0 },
    failures: 2,
    openedAt: 0,
    openMs: 30_000,
    opens: 1,
    probes: [],
    seq: 0,
  }

  it.each([
    ['a number', 42],
    ['a string', 'closed'],
    ['null', null],
    ['a closed circuit with a NaN generation', { ...open, circuit: 'closed', generation: Number.NaN }],
    ['a closed circuit with counts another policy wrote', { ...open, circuit: 'closed', counts: { buckets: 'many' } }],
    ['an object with __proto__ set to a closed circuit', JSON.parse('{"__proto__": {"circuit": "closed"}}')],
  ])('never admits a call on a read answering %s: the store’s own admission decides', async (_, answer) => {
    const shared = memoryBreakerStore()
    shared.set('search', open)
    const store: BreakerStore = { get: () => answer as BreakerState, update: (key, change) => shared.update(key, change) }
    const w = worker(store)
    expect(await w.call()).toMatchObject({ ok: false, error: { code: 'circuit_open' } })
    expect(w.runs).toBe(0)
  })

  it('stops waiting for a read that never settles when the caller cancels, and reads anew storeRefreshMs later', async () => {
    const shared = memoryBreakerStore()
    let hang = true
    let reads = 0
    const store: BreakerStore = {
      get: (key) => {
        reads++
        return hang ? new Promise<never>(() => {}) : shared.get(key)
      },
      update: (key, change) => shared.update(key, change),
    }
    const w = worker(store)
    const cancel = new AbortController()
    const waiting = w.call({}, cancel.signal)
    const alsoWaiting = w.call({}, cancel.signal)
    await w.clock.advance(0)
    cancel.abort()
    await expect(waiting).rejects.toSatisfy((e) => LoopError.is(e) && e.kind === 'cancelled')
    await expect(alsoWaiting).rejects.toSatisfy((e) => LoopError.is(e) && e.kind === 'cancelled')
    expect(reads).toBe(1)
    hang = false
    await w.clock.advance(1000)
    expect(await w.call()).toMatchObject({ ok: true })
    expect(reads).toBe(2)
    expect(w.runs).toBe(1)
  })

  it('decides on the view when a read fails, and asks again only storeRefreshMs later', async () => {
    const shared = memoryBreakerStore()
    let down = false
    let reads = 0
    const store: BreakerStore = {
      get: (key) => {
        reads++
        if (down) throw new Error('ECONNREFUSED')
        return shared.get(key)
      },
      update: (key, change) => shared.update(key, change),
    }
    const w = worker(store)
    await w.call()
    down = true
    await w.clock.advance(1000)
    const failed = await w.call()
    expect(failed).toMatchObject({ ok: true })
    expect(failed.trace.map((e) => e.type)).toContain('circuit-breaker.store_error')
    for (let i = 0; i < 20; i++) expect(await w.call()).toMatchObject({ ok: true })
    expect(reads).toBe(2)
    await w.clock.advance(1000)
    await w.call()
    expect(reads).toBe(3)
  })
})
