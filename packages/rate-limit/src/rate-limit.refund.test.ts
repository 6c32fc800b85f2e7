import { createAgent } from '@shallot/agent'
import { createRun, createStack, defineTool, type Logger } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { gcra, memoryRateLimitStore, type RateDecision, type RateLimitStore, rateLimit } from './index.js'

// A cancelled waiter gives its reserved place back (decision 585): through the layer, on a manual clock.

function setup(options: Parameters<typeof rateLimit>[0], extra: { timeoutMs?: number; logger?: Logger } = {}) {
  const clock = manualClock()
  const ranAt: number[] = []
  const tool = defineTool({ name: 'search', description: 'S', input: z.object({}), effect: 'read', execute: () => ranAt.push(clock.now()) })
  const middleware = [...(extra.timeoutMs === undefined ? [] : [timeout({ ms: extra.timeoutMs })]), rateLimit(options)]
  const stack = createStack({ tools: [tool], clock, middleware, ...(extra.logger ? { logger: extra.logger } : {}) })
  let n = 0
  const call = (signal?: AbortSignal) =>
    stack.dispatch({ id: `c${n++}`, name: 'search', args: {} }, { run: createRun(signal ? { signal } : {}) })
  return { clock, call, ranAt }
}

/** The memory store with its acquire only: a third-party store written before refund existed. */
const withoutRefund = (): RateLimitStore => {
  const inner = memoryRateLimitStore()
  return { acquire: (key, rule, now) => inner.acquire(key, rule, now) }
}

async function cancelTheWaiter(store: RateLimitStore) {
  const { clock, call, ranAt } = setup({ limit: 1, perMs: 1000, maxWaitMs: 2000, store })
  await call()
  const controller = new AbortController()
  const waiting = call(controller.signal)
  await clock.advance(100)
  controller.abort()
  await expect(waiting).rejects.toMatchObject({ kind: 'cancelled' })
  await clock.advance(900)
  const next = call()
  await clock.advance(0)
  const ranAtOnce = ranAt.length === 2
  await clock.runAll()
  await next
  return { ranAtOnce, ranAt, pending: clock.pending }
}

describe('rateLimit: a cancelled waiter gives its place back', () => {
  it('the next caller is admitted at once where, with a store that cannot refund, it waited', async () => {
    const refunded = await cancelTheWaiter(memoryRateLimitStore())
    expect(refunded.ranAtOnce).toBe(true)
    expect(refunded.ranAt).toEqual([0, 1000])
    expect(refunded.pending).toBe(0)
    const kept = await cancelTheWaiter(withoutRefund())
    expect(kept.ranAtOnce).toBe(false)
    expect(kept.ranAt).toEqual([0, 2000])
  })

  it('a call cancelled twice (its run and an outer deadline at once) gives one place back, not two', async () => {
    const store = memoryRateLimitStore()
    const deadline = setup({ limit: 1, perMs: 1000, maxWaitMs: 3000, store }, { timeoutMs: 500 })
    const { clock, call, ranAt } = deadline
    await call()
    const controller = new AbortController()
    const waiting = call(controller.signal).then(
      (result) => result.error?.code,
      (err: { kind?: string }) => err.kind,
    )
    const plain = setup({ limit: 1, perMs: 1000, maxWaitMs: 3000, store })
    await clock.advance(500)
    controller.abort()
    expect(await waiting).toBe('timeout')
    // Had two places come back, both of these would run at once; one back: they run 1000 ms apart.
    await plain.clock.advance(1000)
    const later = [plain.call(), plain.call()]
    await plain.clock.advance(0)
    expect(plain.ranAt).toEqual([1000])
    await plain.clock.runAll()
    await Promise.all(later)
    expect(plain.ranAt).toEqual([1000, 2000])
    expect(ranAt).toEqual([0])
  })

  it('a call whose turn came gives nothing back when cancelled after (the place was used)', async () => {
    const clock = manualClock()
    const ranAt: number[] = []
    let release: () => void = () => {}
    const slow = defineTool({
      name: 'slow',
      description: 'S',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        ranAt.push(clock.now())
        return new Promise<string>((resolve) => (release = () => resolve('done')))
      },
    })
    const stack = createStack({ tools: [slow], clock, middleware: [rateLimit({ limit: 1, perMs: 1000, maxWaitMs: 3000 })] })
    const call = (id: string, signal?: AbortSignal) =>
      stack.dispatch({ id, name: 'slow', args: {} }, { run: createRun(signal ? { signal } : {}) })
    const first = call('a')
    await clock.advance(0)
    release()
    await first
    const controller = new AbortController()
    const second = call('b', controller.signal)
    await clock.advance(1000)
    expect(ranAt).toEqual([0, 1000])
    controller.abort()
    release()
    await second.catch(() => {})
    const third = call('c')
    await clock.advance(0)
    expect(ranAt).toEqual([0, 1000])
    await clock.advance(1000)
    release()
    await third
    expect(ranAt).toEqual([0, 1000, 2000])
  })

  it('a run cancelled with a queue of waiters gives the whole queue back, its tail first', async () => {
    const { clock, call, ranAt } = setup({ limit: 10, perMs: 1000, burst: 1, maxWaitMs: 5000 })
    await call()
    const controller = new AbortController()
    const queue = Array.from({ length: 20 }, () => call(controller.signal))
    await clock.advance(50)
    controller.abort()
    await Promise.allSettled(queue)
    const next = call()
    await clock.advance(50)
    await next
    expect(ranAt).toEqual([0, 100])
  })

  it('50 parallel waiters cancelled at random: the calls that ran never exceed the limit, and places come back', async () => {
    const refunding = await fiftyCancelledAtRandom(memoryRateLimitStore())
    const keeping = await fiftyCancelledAtRandom(withoutRefund())
    expect(refunding).toBeGreaterThan(keeping)
  })

  it('a reservation answered after its caller was cancelled, or after storeTimeoutMs, is given back', async () => {
    const inner = memoryRateLimitStore()
    let hold = false
    const late: Array<() => void> = []
    const store: RateLimitStore = {
      acquire: (k, r, n) => {
        const d = inner.acquire(k, r, n) as RateDecision
        return hold ? new Promise<RateDecision>((resolve) => late.push(() => resolve(d))) : d
      },
      refund: (k, r, res, n) => inner.refund?.(k, r, res, n) ?? false,
    }
    const { clock, call, ranAt } = setup({ limit: 1, perMs: 1000, maxWaitMs: 5000, storeTimeoutMs: 50, store })
    await call()
    hold = true
    const controller = new AbortController()
    const cancelled = call(controller.signal).catch((err: { kind?: string }) => err.kind)
    const timedOut = call() // fails open after 50 ms: it runs, unlimited
    await clock.advance(10)
    controller.abort()
    expect(await cancelled).toBe('cancelled')
    await clock.advance(40)
    await timedOut
    for (const answer of late.reverse()) answer()
    await clock.advance(0)
    hold = false
    const next = call()
    await clock.advance(1000)
    await next
    expect(ranAt).toEqual([0, 50, 1000])
  })

  it('a model call cancelled while it waits gives its place back: the next run asks the model at once', async () => {
    const clock = manualClock()
    const askedAt: number[] = []
    const model = {
      name: 'gpt',
      async generate() {
        askedAt.push(clock.now())
        return { text: 'done', toolCalls: [] }
      },
    }
    const agent = createAgent({ model, tools: [], clock, modelMiddleware: [rateLimit({ limit: 1, perMs: 1000, maxWaitMs: 2000 })] })
    await agent.run({ input: 'a' })
    const controller = new AbortController()
    const cancelled = agent.run({ input: 'b', signal: controller.signal })
    await clock.advance(100)
    controller.abort()
    expect((await cancelled).status).not.toBe('completed')
    await clock.advance(900)
    const next = agent.run({ input: 'c' })
    await clock.advance(0)
    expect((await next).status).toBe('completed')
    expect(askedAt).toEqual([0, 1000])
  })

  it('a refund that never answers holds the next one up only storeTimeoutMs, is logged, and leaves no timer', async () => {
    const inner = memoryRateLimitStore()
    const asked: number[] = []
    const warned: string[] = []
    const noop = () => {}
    const logger: Logger = {
      debug: noop,
      info: noop,
      error: noop,
      warn: (o, msg) => void warned.push(`${msg} ${String((o as { err?: Error }).err?.message)}`),
      child: () => logger,
    }
    const store: RateLimitStore = {
      acquire: (k, r, n) => inner.acquire(k, r, n),
      refund: (k, r, res, n) => {
        asked.push(n)
        return asked.length === 1 ? new Promise<boolean>(() => {}) : (inner.refund?.(k, r, res, n) ?? false)
      },
    }
    const { clock, call } = setup({ limit: 1, perMs: 1000, maxWaitMs: 5000, storeTimeoutMs: 300, store }, { logger })
    await call()
    const controller = new AbortController()
    const queue = [call(controller.signal), call(controller.signal)].map((p) => p.catch(() => {}))
    await clock.advance(10)
    controller.abort()
    await Promise.all(queue)
    expect(asked).toEqual([10])
    await clock.advance(300)
    expect(asked).toEqual([10, 310])
    expect(warned.filter((w) => w.includes('place back'))).toEqual([
      "rate limit store failed to give a cancelled call's place back; the place stays taken no answer within 300 ms",
    ])
    expect(clock.pending).toBe(0)
  })

  it('a store whose refund throws or rejects keeps the place, logged; the cancellation is the caller’s only error', async () => {
    for (const refund of [
      () => {
        throw new Error('boom')
      },
      () => Promise.reject(new Error('down')),
    ]) {
      const inner = memoryRateLimitStore()
      const warned: string[] = []
      const noop = () => {}
      const logger: Logger = { debug: noop, info: noop, error: noop, warn: (_, msg) => void warned.push(String(msg)), child: () => logger }
      const store: RateLimitStore = { acquire: (k, r, n) => inner.acquire(k, r, n), refund }
      const { clock, call } = setup({ limit: 1, perMs: 1000, maxWaitMs: 2000, store }, { logger })
      await call()
      const controller = new AbortController()
      const waiting = call(controller.signal)
      await clock.advance(10)
      controller.abort()
      await expect(waiting).rejects.toMatchObject({ kind: 'cancelled' })
      await clock.advance(0)
      expect(warned.filter((w) => w.includes('place back'))).toEqual([
        "rate limit store failed to give a cancelled call's place back; the place stays taken",
      ])
    }
  })
})

/** 6 rounds of 50 calls at once, half of them cancelled at a random time within 2 s; answers how many ran. */
async function fiftyCancelledAtRandom(store: RateLimitStore): Promise<number> {
  const random = seededRandom(585)
  const rule = { intervalMs: 100, burst: 3, maxWaitMs: 2000 }
  const { clock, call, ranAt } = setup({ limit: 10, perMs: 1000, burst: 3, maxWaitMs: 2000, store })
  const calls: Array<Promise<unknown>> = []
  for (let round = 0; round < 6; round++) {
    for (let i = 0; i < 50; i++) {
      const controller = new AbortController()
      calls.push(call(controller.signal).catch(() => {}))
      if (random() < 0.5) clock.timer(Math.floor(random() * 2000), () => controller.abort())
    }
    await clock.advance(1000)
  }
  await clock.runAll()
  await Promise.all(calls)
  // The limit as GCRA states it: the calls that ran, replayed in time order, each find a place at once.
  let tat: number | undefined
  for (const t of [...ranAt].sort((x, y) => x - y)) {
    const step = gcra(tat, t, { ...rule, maxWaitMs: 0 })
    expect(step.admitted, `the call at ${t} ran over the limit`).toBe(true)
    tat = step.tat
  }
  expect(clock.pending).toBe(0)
  return ranAt.length
}
