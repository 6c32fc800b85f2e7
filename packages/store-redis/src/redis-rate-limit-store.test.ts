import { createRun, createStack, defineTool, OptionsError } from '@shallot/core'
import { rateLimit } from '@shallot/rate-limit'
import { rateLimitStoreContract } from '@shallot/rate-limit/contract'
import { manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisRateLimitStore } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'
import { startRedisServer } from './test-support/redis-server.js'

const fixture = useRedis()
let prefixes = 0
const freshPrefix = () => `rl${++prefixes}`

describe('redisRateLimitStore keeps the store contract (one Lua script, Redis time replaced by the contract clock)', () => {
  for (const c of rateLimitStoreContract((clock) =>
    redisRateLimitStore({ client: fixture.client, prefix: freshPrefix(), wallNow: () => clock.now(), timeoutMs: 5_000 }),
  )) {
    it(c.name, () => c.run())
  }
})

const rule = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }

describe('redisRateLimitStore', () => {
  it('keeps a key in one hash slot per key, escaped, and lets it expire once at rest', async () => {
    const prefix = freshPrefix()
    const store = redisRateLimitStore({ client: fixture.client, prefix })
    await store.acquire('a{b}', rule, 0)
    const key = `${prefix}:{a%7bb%7d}:rate`
    expect(Number(await fixture.client.get(key))).toBeGreaterThan(0)
    const ttl = await fixture.client.pttl(key)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(2000)
  })

  it.each([
    ['not a number', async (key: string) => void (await fixture.client.set(key, 'garbage'))],
    ['NaN', async (key: string) => void (await fixture.client.set(key, 'nan'))],
    ['a hash', async (key: string) => void (await fixture.client.hset(key, 'x', '1'))],
  ])('reads a TAT that is %s as a key at rest, and overwrites it', async (_, corrupt) => {
    const prefix = freshPrefix()
    await corrupt(`${prefix}:{k}:rate`)
    const store = redisRateLimitStore({ client: fixture.client, prefix })
    expect(await store.acquire('k', rule, 0)).toEqual({ admitted: true, waitMs: 0 })
    expect((await store.acquire('k', rule, 0)).admitted).toBe(false)
  })

  it('a waiter cancelled before its turn gives its place back in Redis: the next caller goes at once', async () => {
    const clock = manualClock()
    const ranAt: number[] = []
    const tool = defineTool({
      name: 'lookup',
      description: 'L',
      input: z.object({}),
      effect: 'read',
      execute: () => ranAt.push(clock.now()),
    })
    const prefix = freshPrefix()
    const store = redisRateLimitStore({ client: fixture.client, prefix, wallNow: () => 1_700_000_000_000 + clock.now() })
    const stack = createStack({ tools: [tool], clock, middleware: [rateLimit({ limit: 1, maxWaitMs: 2000, store })] })
    const call = (id: string, signal?: AbortSignal) =>
      stack.dispatch({ id, name: 'lookup', args: {} }, { run: createRun(signal ? { signal } : {}) })
    await call('a')
    const controller = new AbortController()
    const reserved = new Promise<void>((resolve) => stack.on((event) => event.type === 'rate-limit.waiting' && resolve()))
    const waiting = call('b', controller.signal).catch((err: { kind?: string }) => err.kind)
    await reserved
    controller.abort()
    expect(await waiting).toBe('cancelled')
    // The refund goes to Redis unawaited: it has landed once the key's refund sequence exists.
    for (let i = 0; i < 1000 && (await fixture.client.get(`${prefix}:{tool:lookup}:rate:seq`)) === null; i++);
    await clock.advance(1000)
    await call('c')
    expect(ranAt).toEqual([0, 1000])
  })

  it('reads a refund sequence that is not a number, or not a string, as none, and still decides', async () => {
    const prefix = freshPrefix()
    await fixture.client.hset(`${prefix}:{k}:rate:seq`, 'x', '1')
    const store = redisRateLimitStore({ client: fixture.client, prefix, wallNow: () => 1_700_000_000_000 })
    const wide = { intervalMs: 1000, burst: 1, maxWaitMs: 5000 }
    await store.acquire('k', wide, 0)
    const waiting = await store.acquire('k', wide, 0)
    expect(waiting.reservation).toMatchObject({ seq: 0 })
    expect(await store.refund?.('k', wide, { tat: waiting.reservation?.tat ?? 0, seq: 7 }, 0)).toBe(false)
    expect(await store.refund?.('k', wide, { tat: Number.NaN, seq: 0 }, 0)).toBe(false)
    expect(await store.refund?.('k', wide, waiting.reservation as never, 0)).toBe(true)
    expect(await fixture.client.get(`${prefix}:{k}:rate:seq`)).toBe('1')
    expect(await fixture.client.pttl(`${prefix}:{k}:rate:seq`)).toBeGreaterThan(0)
  })

  it('refuses options it cannot use, naming them', () => {
    expect(() => redisRateLimitStore({ client: {} as never })).toThrow(OptionsError)
    expect(() => redisRateLimitStore({ client: fixture.client, prefix: 'a b' })).toThrow(/option prefix/)
    expect(() => redisRateLimitStore({ client: fixture.client, timeoutMs: -1 })).toThrow(/option timeoutMs/)
  })

  it('rejects with a soft store_unavailable past timeoutMs when Redis is silent', async () => {
    const clock = manualClock()
    const server = await startRedisServer()
    const client = new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
    await client.connect()
    try {
      const store = redisRateLimitStore({ client, clock, timeoutMs: 100 })
      await client.client('PAUSE', 2000, 'ALL')
      const refused = expect(store.acquire('k', rule, 0)).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
      await clock.advance(100)
      await refused
    } finally {
      client.disconnect()
      await server.close()
    }
  })

  it('a reservation Redis answers after timeoutMs is given back once Redis answers', async () => {
    const clock = manualClock()
    const prefix = freshPrefix()
    const wide = { intervalMs: 1000, burst: 1, maxWaitMs: 5000 }
    const store = redisRateLimitStore({ client: fixture.client, prefix, clock, timeoutMs: 100, wallNow: () => 1_700_000_000_000 })
    await store.acquire('k', wide, 0)
    const pauser = fixture.client.duplicate({ lazyConnect: true })
    await pauser.connect()
    try {
      await pauser.client('PAUSE', 300, 'WRITE')
      const refused = expect(store.acquire('k', wide, 0)).rejects.toMatchObject({ code: 'store_unavailable' })
      await clock.advance(100)
      await refused
    } finally {
      pauser.disconnect()
    }
    for (let i = 0; i < 1000 && (await fixture.client.get(`${prefix}:{k}:rate:seq`)) === null; i++);
    expect(await fixture.client.get(`${prefix}:{k}:rate:seq`)).toBe('1')
    expect(await store.acquire('k', wide, 0)).toMatchObject({ admitted: true, waitMs: 1000 })
  })

  it('with Redis down, a layer failing open runs the call and one failing closed refuses it softly', async () => {
    const server = await startRedisServer()
    const client = new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => 50 })
    client.on('error', () => {})
    await client.connect()
    let runs = 0
    const tool = defineTool({ name: 'lookup', description: 'L', input: z.object({}), effect: 'read', execute: () => ++runs })
    const store = redisRateLimitStore({ client, timeoutMs: 500 })
    const open = createStack({ tools: [tool], middleware: [rateLimit({ limit: 1, maxWaitMs: 0, store })] })
    const closed = createStack({ tools: [tool], middleware: [rateLimit({ limit: 1, maxWaitMs: 0, store, onStoreFailure: 'closed' })] })
    try {
      expect((await open.dispatch({ id: 'a', name: 'lookup', args: {} })).ok).toBe(true)
      await server.stop()
      const through = await open.dispatch({ id: 'b', name: 'lookup', args: {} })
      expect(through.ok).toBe(true)
      expect(through.trace.map((e) => e.type)).toEqual(['rate-limit.store_failed'])
      const refused = await closed.dispatch({ id: 'c', name: 'lookup', args: {} })
      expect(refused.error).toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
      expect(runs).toBe(2)
    } finally {
      client.disconnect()
      await server.close()
    }
  })
})
