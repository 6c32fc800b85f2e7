import { createRun, createStack, defineTool, OptionsError, type StackEvent, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { memoryRateLimitStore, type RateLimitStore, rateLimit } from './index.js'

function setup(options: Parameters<typeof rateLimit>[0], extra: { timeoutMs?: number } = {}) {
  const clock = manualClock()
  let runs = 0
  const search = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => {
      runs++
      return `results for ${q} at ${clock.now()}`
    },
  })
  const middleware = [rateLimit(options), ...(extra.timeoutMs === undefined ? [] : [timeout({ ms: extra.timeoutMs })])]
  const stack = createStack({ tools: [search], clock, middleware })
  const events: StackEvent[] = []
  stack.on((event) => events.push(event))
  let n = 0
  const call = (q = `q${n}`, run = createRun()) => stack.dispatch({ id: `c${n++}`, name: 'search', args: { q } }, { run })
  return { clock, stack, call, events, runs: () => runs }
}

describe('rateLimit: options', () => {
  it.each([
    [{ limit: Number.NaN }, /option limit: must be a whole number of calls/],
    [{ limit: -1 }, /option limit: must be at least 1 call/],
    [{ limit: 0 }, /option limit: must be at least 1 call/],
    [{ limit: 1e12 }, /option limit: must be at most 1,000,000 calls/],
    [{ limit: Number.POSITIVE_INFINITY }, /option limit/],
    [{ limit: 2.5 }, /option limit: must be a whole number/],
    [{ limit: '10' }, /option limit: must be a whole number/],
    [{ limit: 5, perMs: -1000 }, /option perMs: must be at least 1 ms/],
    [{ limit: 5, perMs: 1e15 }, /option perMs: must be at most a day/],
    [{ limit: 5, burst: 0 }, /option burst/],
    [{ limit: 5, maxWaitMs: -1 }, /option maxWaitMs: must be 0/],
    [{ limit: 5, maxWaitMs: 2 ** 40 }, /option maxWaitMs: must be at most 2147483647/],
    [{ limit: 5, onStoreFailure: 'maybe' }, /option onStoreFailure/],
    [{ limit: 5, key: 'tenant' }, /option key: must be a function/],
    [{ limit: 5, store: {} }, /option store: must be a RateLimitStore/],
    [{ limit: 5, limt: 5 }, /limt/],
    [{}, /option limit/],
  ])('refuses %j with an OptionsError naming the option', (options, message) => {
    expect(() => rateLimit(options as never)).toThrow(OptionsError)
    expect(() => rateLimit(options as never)).toThrow(message)
  })
})

describe('rateLimit: over the limit', () => {
  it('admits the burst, waits for a turn within maxWaitMs, refuses past it with rate_limited and retryAfterMs', async () => {
    const { clock, call, runs } = setup({ limit: 2, perMs: 1000, maxWaitMs: 600 })
    const results = [call(), call(), call(), call()]
    await clock.advance(0)
    // burst of 2 at once; the 3rd reserves t=500 (within 600); the 4th would wait 1000: refused
    const fourth = await results[3]
    expect(fourth?.ok).toBe(false)
    expect(fourth?.error).toMatchObject({ code: 'rate_limited', retryAfterMs: 1000, retryable: false, safeToRepeat: true })
    expect(fourth?.content).toContain('"error":"rate_limited"')
    expect(fourth?.content).toContain('"retryAfterMs":1000')
    expect(runs()).toBe(2)
    await clock.advance(499)
    expect(runs()).toBe(2)
    await clock.advance(1)
    const third = await results[2]
    expect(third?.ok).toBe(true)
    expect(third?.content).toBe('results for q2 at 500')
    expect(third?.trace.map((e) => e.type)).toEqual(['rate-limit.waiting'])
    expect(fourth?.trace.map((e) => e.type)).toEqual(['rate-limit.refused'])
  })

  it('never lets a call wait past maxWaitMs: 200 calls at once, every admitted one within its bound, the rate held', async () => {
    const { clock, call } = setup({ limit: 10, perMs: 1000, burst: 1, maxWaitMs: 3000 })
    const started = clock.now()
    const finished: number[] = []
    const all = Array.from({ length: 200 }, () => call().then((r) => (r.ok ? finished.push(clock.now() - started) : r)))
    await clock.runAll()
    await Promise.all(all)
    expect(finished).toHaveLength(31) // at once, then one per 100 ms up to 3,000 ms
    expect(Math.max(...finished)).toBe(3000)
    expect(finished).toEqual(Array.from({ length: 31 }, (_, i) => i * 100))
  })

  it('keeps buckets per tool name by default, per key with a key function, and lets undefined through', async () => {
    const { clock, call } = setup({
      limit: 1,
      maxWaitMs: 0,
      key: (ctx) => ('call' in ctx && (ctx.call.args as { q: string }).q === 'free' ? undefined : 'tenant-a'),
    })
    expect((await call('x')).ok).toBe(true)
    expect((await call('y')).error?.code).toBe('rate_limited')
    for (let i = 0; i < 5; i++) expect((await call('free')).ok).toBe(true)
    await clock.advance(1000)
    expect((await call('z')).ok).toBe(true)
  })

  it("with per: 'all' every tool takes from one bucket", async () => {
    const clock = manualClock()
    const tools = ['a', 'b'].map((name) =>
      defineTool({ name, description: name, input: z.object({}), effect: 'read', execute: () => name }),
    )
    const stack = createStack({ tools, clock, middleware: [rateLimit({ limit: 1, maxWaitMs: 0, per: 'all' })] })
    expect((await stack.dispatch({ id: '1', name: 'a', args: {} })).ok).toBe(true)
    expect((await stack.dispatch({ id: '2', name: 'b', args: {} })).error?.code).toBe('rate_limited')
  })

  it('treats __proto__ and constructor keys as keys like any other', async () => {
    for (const key of ['__proto__', 'constructor', 'toString']) {
      const { call } = setup({ limit: 1, maxWaitMs: 0, key: () => key })
      expect((await call()).ok).toBe(true)
      expect((await call()).error?.code).toBe('rate_limited')
    }
    expect(({} as Record<string, unknown>).limit).toBeUndefined()
  })

  it('50 parallel calls in one process: exactly the burst plus what fits in maxWaitMs run, the rest are refused', async () => {
    const { clock, call, runs } = setup({ limit: 20, perMs: 1000, burst: 5, maxWaitMs: 500 })
    const all = Promise.all(Array.from({ length: 50 }, () => call()))
    await clock.runAll()
    const results = await all
    expect(results.filter((r) => r.ok)).toHaveLength(5 + 10) // 5 at once, then one per 50 ms for 500 ms
    expect(results.filter((r) => r.error?.code === 'rate_limited')).toHaveLength(35)
    expect(runs()).toBe(15)
    expect(clock.pending).toBe(0)
  })
})

describe('rateLimit: cancellation and deadlines', () => {
  it('a call cancelled while it waits ends at once with the run cancelled, its timer cleared, the tool never run', async () => {
    const { clock, call, runs } = setup({ limit: 1, perMs: 1000, maxWaitMs: 5000 })
    await call()
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const waiting = call('late', run)
    await clock.advance(10)
    expect(clock.pending).toBe(1)
    controller.abort()
    await expect(waiting).rejects.toMatchObject({ kind: 'cancelled' })
    expect(clock.pending).toBe(0)
    expect(runs()).toBe(1)
  })

  it('an outer deadline ends the wait with the deadline’s own timeout, and leaves no timer', async () => {
    const clock = manualClock()
    const tool = defineTool({ name: 'search', description: 'S', input: z.object({}), effect: 'read', execute: () => 'ok' })
    const stack = createStack({ tools: [tool], clock, middleware: [timeout({ ms: 300 }), rateLimit({ limit: 1, maxWaitMs: 5000 })] })
    await stack.dispatch({ id: 'a', name: 'search', args: {} })
    const waiting = stack.dispatch({ id: 'b', name: 'search', args: {} })
    await clock.advance(300)
    const result = await waiting
    expect(result.error?.code).toBe('timeout')
    await clock.runAll()
    expect(clock.pending).toBe(0)
  })

  it('does not wait or take a place when the run has no step left: the budget ends it', async () => {
    const { call, runs } = setup({ limit: 1, maxWaitMs: 5000 })
    await call()
    const run = createRun({ maxSteps: 1, stepsUsed: 1 })
    await expect(call('x', run)).rejects.toMatchObject({ kind: 'budget_exhausted' })
    expect(runs()).toBe(1)
  })
})

describe('rateLimit: hostile key functions', () => {
  it('a key function that throws fails the call before the tool runs, naming rateLimit() and key(ctx)', async () => {
    const { call, runs } = setup({
      limit: 1,
      key: () => {
        throw new Error('no tenant')
      },
    })
    await expect(call()).rejects.toThrow(/rateLimit\(\): key\(ctx\) threw: no tenant/)
    expect(runs()).toBe(0)
  })

  it('a key function that returns a promise (one that never settles) is refused at once, not awaited', async () => {
    const { call, runs, clock } = setup({ limit: 1, key: (() => new Promise(() => {})) as never })
    await expect(call()).rejects.toThrow(/key\(ctx\) returned a promise; it must return a string or undefined synchronously/)
    const rejecting = setup({ limit: 1, key: (() => Promise.reject(new Error('late'))) as never })
    await expect(rejecting.call()).rejects.toThrow(/returned a promise/)
    expect(runs()).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('a key function that returns a number is refused naming the type', async () => {
    const { call } = setup({ limit: 1, key: (() => 42) as never })
    await expect(call()).rejects.toThrow(/key\(ctx\) must return a string or undefined, got number/)
  })
})

describe('rateLimit: the store fails', () => {
  const broken: RateLimitStore = {
    acquire: () =>
      Promise.reject(new ToolError('store_unavailable', 'The Redis store failed rateLimit.acquire: down.', { safeToRepeat: true })),
  }
  const silent: RateLimitStore = { acquire: () => new Promise(() => {}) }
  const throwing: RateLimitStore = {
    acquire: () => {
      throw new Error('boom')
    },
  }
  const garbage: RateLimitStore = { acquire: () => ({ admitted: 'yes', waitMs: Number.NaN }) as never }

  it.each([
    ['rejects', broken],
    ['throws', throwing],
    ['answers garbage', garbage],
  ])('fails open by default when the store %s: the call runs, a rate-limit.store_failed event says so', async (_, store) => {
    const { call, runs } = setup({ limit: 1, store })
    const result = await call()
    expect(result.ok).toBe(true)
    expect(result.trace.map((e) => e.type)).toEqual(['rate-limit.store_failed'])
    expect(runs()).toBe(1)
  })

  it.each([
    ['rejects', broken],
    ['throws', throwing],
    ['answers garbage', garbage],
  ])('fails closed when asked, when the store %s: a soft store_unavailable, the tool never run', async (_, store) => {
    const { call, runs } = setup({ limit: 1, store, onStoreFailure: 'closed' })
    const result = await call()
    expect(result.error).toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
    expect(runs()).toBe(0)
  })

  it('a store that never answers is given storeTimeoutMs, then failed (open or closed), leaving no timer', async () => {
    const open = setup({ limit: 1, store: silent, storeTimeoutMs: 50 })
    const pending = open.call()
    await open.clock.advance(50)
    expect((await pending).ok).toBe(true)
    const closed = setup({ limit: 1, store: silent, storeTimeoutMs: 50, onStoreFailure: 'closed' })
    const refused = closed.call()
    await closed.clock.advance(50)
    expect((await refused).error?.code).toBe('store_unavailable')
    expect(open.clock.pending + closed.clock.pending).toBe(0)
  })

  it('cancelling while the store is asked ends the call with the cancellation, not a store failure', async () => {
    const { call, clock } = setup({ limit: 1, store: silent, onStoreFailure: 'closed' })
    const controller = new AbortController()
    const pending = call('x', createRun({ signal: controller.signal }))
    await clock.advance(10)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ kind: 'cancelled' })
    expect(clock.pending).toBe(0)
  })

  it('a shared store is one limit for two layers (two stacks, two workers)', async () => {
    const store = memoryRateLimitStore()
    const a = setup({ limit: 1, maxWaitMs: 0, store })
    const b = setup({ limit: 1, maxWaitMs: 0, store })
    expect((await a.call()).ok).toBe(true)
    expect((await b.call()).error?.code).toBe('rate_limited')
  })
})
