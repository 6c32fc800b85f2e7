// What the fleet gives up for calls that cost Redis nothing, measured: how long after one worker opens
// a circuit another still runs calls against it, and when a retry budget spent or refilled by one
// worker is seen by another. Each worker has its own connection, stores and default stack; Redis keeps
// the shared virtual time (wallNow), each worker's clock starts somewhere else.
import { consecutive } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, ToolError, type ToolResult } from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { defaultMiddleware } from 'shallot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { type RedisServer, startRedisServer } from './test-support/redis-server.js'

let server: RedisServer
const clients: Redis[] = []
beforeAll(async () => {
  server = await startRedisServer()
})
afterAll(async () => {
  for (const client of clients) client.disconnect()
  await server?.close()
})

/** One worker process's view of the fleet: its own connection, stores, clock origin and default stack. */
async function worker(prefix: string, base: ManualClock, origin: number, options: { threshold?: number; capacity?: number } = {}) {
  const client = new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
  clients.push(client)
  await client.connect()
  const clock: Clock = { now: () => base.now() + origin, sleep: (ms, signal) => base.sleep(ms, signal) }
  const stores = redisStores({ client, prefix, clock, wallNow: base.now, retryBudget: { capacity: options.capacity ?? 500 } })
  let failing = false
  const search = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      if (failing) throw new ToolError('upstream_error', 'upstream answered 503')
      return 'hit'
    },
  })
  const middleware = defaultMiddleware({
    circuitBreaker: { store: stores.breaker, policy: consecutive({ threshold: options.threshold ?? 2 }) },
    // No wait between attempts: the budget, not the backoff, is what the test watches.
    retry: { retryBudget: stores.retryBudget, backoff: 'constant', baseMs: 0 },
    idempotency: { store: stores.idempotency },
  })
  const stack = createStack({ clock, middleware, tools: [search] })
  let serial = 0
  return {
    call: (): Promise<ToolResult> => stack.dispatch({ id: `c${++serial}`, name: 'search', args: { q: String(serial) } }),
    fail: (on: boolean) => {
      failing = on
    },
  }
}

describe('the fleet on Redis: the staleness a call that asks Redis nothing buys, measured', () => {
  it('a circuit opened by worker A stops worker B within storeRefreshMs (1 s) of the opening, B calling every 50 ms', async () => {
    const base = manualClock(1_700_000_000_000)
    const [a, b] = [await worker('open', base, 5_000_000), await worker('open', base, -42)]
    expect(await b.call()).toMatchObject({ ok: true }) // B reads the circuit closed now
    const readAt = base.now()
    await base.advance(1)
    a.fail(true)
    expect(await a.call()).toMatchObject({ ok: false, error: { code: 'upstream_error' }, attempts: 3 })
    const openedAt = base.now()
    expect(await a.call()).toMatchObject({ ok: false, error: { code: 'circuit_open' } })

    let stoppedAt: number | undefined
    let ranAfterOpening = 0
    while (stoppedAt === undefined && base.now() - openedAt <= 5_000) {
      const r = await b.call()
      if (r.error?.code === 'circuit_open') stoppedAt = base.now()
      else ranAfterOpening++
      if (stoppedAt === undefined) await base.advance(50)
    }
    const staleMs = (stoppedAt ?? Number.POSITIVE_INFINITY) - openedAt
    console.info(`redis fleet: B ran ${ranAfterOpening} calls against the open circuit and stopped ${staleMs} ms after the opening`)
    expect(staleMs).toBeLessThanOrEqual(1000)
    // The worst case of the bound: B had read the circuit just before it opened, so it trusted that for the whole
    // second, and stopped at its first call once the second was over.
    expect((stoppedAt ?? 0) - readAt).toBeGreaterThanOrEqual(1000)
    expect((stoppedAt ?? 0) - readAt).toBeLessThan(1050)
  })

  it('a retry budget spent by worker A is seen by worker B’s next retry at once; A’s refills reach B within refillFlushMs (1 s)', async () => {
    const base = manualClock(1_700_000_000_000)
    const options = { threshold: 100, capacity: 10 }
    const [a, b] = [await worker('budget', base, 0, options), await worker('budget', base, 777, options)]
    a.fail(true)
    b.fail(true)
    // Two retries at 5 tokens each: A empties the bucket.
    expect(await a.call()).toMatchObject({ ok: false, attempts: 3 })
    expect(await b.call()).toMatchObject({ ok: false, attempts: 1 })

    a.fail(false)
    const refilledFrom = base.now()
    for (let i = 0; i < 10; i++) expect(await a.call()).toMatchObject({ ok: true })
    // A holds its 10 refills: the bucket, and B, see none of them yet.
    expect(await b.call()).toMatchObject({ ok: false, attempts: 1 })
    let seenAt: number | undefined
    while (seenAt === undefined && base.now() - refilledFrom <= 5_000) {
      await base.advance(100)
      await a.call()
      if ((await b.call()).attempts > 1) seenAt = base.now()
    }
    const lagMs = (seenAt ?? Number.POSITIVE_INFINITY) - refilledFrom
    console.info(`redis fleet: A's refills reached B's retries ${lagMs} ms after A's first success`)
    expect(lagMs).toBeLessThanOrEqual(1000)
  })
})
