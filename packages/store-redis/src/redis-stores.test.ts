import { circuitBreaker } from '@shallot/circuit-breaker'
import { createStack, defineTool, OptionsError, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { type RedisServer, startRedisServer } from './test-support/redis-server.js'

let redis: RedisServer
let client: Redis
let prefixes = 0
const freshPrefix = () => `s${++prefixes}`

beforeAll(async () => {
  redis = await startRedisServer({ persist: true })
  // What the README asks for: fail fast while Redis is away, reconnect quickly when it is back.
  client = new Redis(redis.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 20, lazyConnect: true })
  client.on('error', () => {})
  await client.connect()
})
afterAll(async () => {
  client?.disconnect()
  await redis?.close()
})

function fleetStack(prefix: string, clock = manualClock()) {
  const effects = { charges: 0, searches: 0 }
  const charge = defineTool({
    name: 'charge_card',
    description: 'charge',
    input: z.object({ order: z.string() }),
    effect: 'write',
    execute: ({ order }) => {
      effects.charges++
      return { charged: order }
    },
  })
  let searchFails = false
  const search = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      effects.searches++
      if (searchFails) throw new ToolError('upstream_error', 'upstream answered 503')
      return 'hit'
    },
  })
  const stores = redisStores({ client, prefix, clock })
  const stack = createStack({
    clock,
    tools: [charge, search],
    middleware: [
      idempotency({ store: stores.idempotency, key: (_ctx, args) => (args as { order: string }).order }),
      circuitBreaker({ store: stores.breaker }),
      retry({ retryBudget: stores.retryBudget, backoff: 'none' }),
    ],
  })
  const failSearches = (fails: boolean) => {
    searchFails = fails
  }
  return { stack, stores, effects, clock, failSearches }
}

describe('redisStores(): options', () => {
  it('refuses a bad option with its name and the value it got', () => {
    expect(() => redisStores({ client, prefix: 'has space' })).toThrow(OptionsError)
    expect(() => redisStores({ client, prefix: 'a{b}' })).toThrow(/option prefix: .*braces.*got "a\{b\}"/)
    expect(() => redisStores({ client, timeoutMs: 0 })).toThrow(/option timeoutMs/)
    expect(() => redisStores({ client, retryBudget: { capacity: -1 } })).toThrow(/option retryBudget\.capacity/)
    expect(() => redisStores({ client: {} as Redis })).toThrow(/option client: must be an ioredis client/)
  })
})

describe('redisStores(): a slow Redis (paused with SIGSTOP)', () => {
  it('answers within the timeout: a write is refused store_unavailable, a read runs on the local breaker, no retry is spent', async () => {
    const { stack, effects, clock, failSearches } = fleetStack(freshPrefix())
    expect(await stack.dispatch({ id: 'warm', name: 'search', args: { q: 'warm' } })).toMatchObject({ ok: true })
    redis.pause()
    try {
      const write = stack.dispatch({ id: 'w1', name: 'charge_card', args: { order: 'o-1' } })
      const read = stack.dispatch({ id: 'r1', name: 'search', args: { q: 'x' } })
      await clock.advance(200)
      const [written, searched] = await Promise.all([write, read])
      expect(written).toMatchObject({ ok: false, error: { code: 'store_unavailable', retryable: true, safeToRepeat: true } })
      expect(written.trace.map((e) => e.type)).toContain('idempotency.store_error')
      // The breaker saw the circuit closed a moment ago (the warm-up): the read asked Redis nothing.
      expect(searched).toMatchObject({ ok: true, value: 'hit' })
      expect(searched.trace.map((e) => e.type)).not.toContain('circuit-breaker.store_error')
      expect(effects.charges).toBe(0)

      // Once that view is older than storeRefreshMs (1000), a read asks again, waits at most timeoutMs, and runs on the view.
      await clock.advance(1000)
      const later = stack.dispatch({ id: 'r3', name: 'search', args: { q: 'z' } })
      await clock.advance(200)
      expect(await later).toMatchObject({
        ok: true,
        value: 'hit',
        trace: expect.arrayContaining([expect.objectContaining({ type: 'circuit-breaker.store_error' })]),
      })

      failSearches(true)
      const failing = stack.dispatch({ id: 'r2', name: 'search', args: { q: 'y' } })
      for (let i = 0; i < 4; i++) await clock.advance(200)
      expect(await failing).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    } finally {
      redis.resume()
    }
  })

  it('gives back the key of a begin that answered after its deadline, so the identical call runs once Redis is back', async () => {
    const prefix = freshPrefix()
    const { stack, effects, clock } = fleetStack(prefix)
    redis.pause()
    let refused: Awaited<ReturnType<typeof stack.dispatch>>
    try {
      const call = stack.dispatch({ id: 'w1', name: 'charge_card', args: { order: 'o-late' } })
      await clock.advance(200)
      refused = await call
    } finally {
      redis.resume()
    }
    expect(refused).toMatchObject({ ok: false, error: { code: 'store_unavailable' } })
    await vi.waitFor(async () => expect(await client.exists(`${prefix}:{default}:idem:o-late`)).toBe(0))
    expect(await stack.dispatch({ id: 'w2', name: 'charge_card', args: { order: 'o-late' } })).toMatchObject({ ok: true, replayed: false })
    expect(effects.charges).toBe(1)
  })
})

describe('redisStores(): Redis stopped and restarted', () => {
  it('refuses softly while Redis is down, crashes nothing, and after the restart replays what was stored before', async () => {
    const { stack, effects } = fleetStack(freshPrefix())
    expect(await stack.dispatch({ id: 'a', name: 'charge_card', args: { order: 'o-kept' } })).toMatchObject({ ok: true, replayed: false })
    await redis.stop()
    try {
      const down = await stack.dispatch({ id: 'b', name: 'charge_card', args: { order: 'o-new' } })
      expect(down).toMatchObject({ ok: false, error: { code: 'store_unavailable' } })
      expect(await stack.dispatch({ id: 'c', name: 'search', args: { q: 'x' } })).toMatchObject({ ok: true })
    } finally {
      await redis.restart()
    }
    await vi.waitFor(() => expect(client.status).toBe('ready'), { timeout: 5000 })
    expect(await stack.dispatch({ id: 'd', name: 'charge_card', args: { order: 'o-kept' } })).toMatchObject({
      ok: true,
      replayed: true,
      value: { charged: 'o-kept' },
    })
    expect(await stack.dispatch({ id: 'e', name: 'charge_card', args: { order: 'o-new' } })).toMatchObject({ ok: true, replayed: false })
    expect(effects.charges).toBe(2)
  })
})
