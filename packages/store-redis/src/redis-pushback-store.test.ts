import { OptionsError } from '@shallot/core'
import { MAX_PUSHBACK_MS } from '@shallot/rate-limit'
import { pushbackStoreContract } from '@shallot/rate-limit/contract'
import { manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { redisPushbackStore, redisStores } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'
import { startRedisServer } from './test-support/redis-server.js'

const fixture = useRedis()
let prefixes = 0
const freshPrefix = () => `pb${++prefixes}`
const EPOCH = 1_700_000_000_000

describe('redisPushbackStore keeps the pushback store contract (one Lua script each, Redis time replaced by the contract clock)', () => {
  for (const c of pushbackStoreContract((clock) =>
    redisPushbackStore({ client: fixture.client, prefix: freshPrefix(), wallNow: () => clock.now(), timeoutMs: 5_000 }),
  )) {
    it(c.name, () => c.run())
  }
})

describe('redisStores().pushback keeps it too, on the stores’ own prefix and deadline', () => {
  for (const c of pushbackStoreContract(
    (clock) => redisStores({ client: fixture.client, prefix: freshPrefix(), wallNow: () => clock.now(), timeoutMs: 5_000 }).pushback,
  )) {
    it(c.name, () => c.run())
  }
})

describe('redisPushbackStore', () => {
  it('keeps a hold at prefix:{key}:pushback, braces escaped, expiring a second after it ends on Redis’s clock', async () => {
    const prefix = freshPrefix()
    const store = redisPushbackStore({ client: fixture.client, prefix })
    await store.hold('a{b}', 2_000, 0)
    const key = `${prefix}:{a%7bb%7d}:pushback`
    const ttl = await fixture.client.pttl(key)
    expect(ttl).toBeGreaterThan(2_000)
    expect(ttl).toBeLessThanOrEqual(3_000)
    const held = await store.heldFor('a{b}', 0)
    expect(held).toBeGreaterThan(1_000)
    expect(held).toBeLessThanOrEqual(2_000)
    expect(await store.heldFor('a%7bb%7d', 0)).toBe(0)
  })

  it.each([
    ['not a number', 'garbage'],
    ['NaN', 'nan'],
  ])('answers a hold that is %s as a soft store_unavailable, and a new hold overwrites it', async (_, value) => {
    const prefix = freshPrefix()
    await fixture.client.set(`${prefix}:{k}:pushback`, value)
    const store = redisPushbackStore({ client: fixture.client, prefix, wallNow: () => EPOCH })
    await expect(store.heldFor('k', 0)).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
    await store.hold('k', 5_000, 0)
    expect(await store.heldFor('k', 0)).toBe(5_000)
  })

  it.each([
    ['a hash', async (key: string) => void (await fixture.client.hset(key, 'x', '1'))],
    ['a hold far past MAX_PUSHBACK_MS', async (key: string) => void (await fixture.client.set(key, String(EPOCH + 1e12)))],
    ['Infinity', async (key: string) => void (await fixture.client.set(key, '1e999'))],
  ])('replaces %s with the hold it is given', async (_, plant) => {
    const prefix = freshPrefix()
    await plant(`${prefix}:{k}:pushback`)
    const store = redisPushbackStore({ client: fixture.client, prefix, wallNow: () => EPOCH })
    await store.hold('k', 5_000, 0)
    expect(await store.heldFor('k', 0)).toBe(5_000)
  })

  it('reads a hold far ahead as it is: the layer, not the store, refuses a rest past MAX_PUSHBACK_MS', async () => {
    const prefix = freshPrefix()
    await fixture.client.set(`${prefix}:{k}:pushback`, String(EPOCH + MAX_PUSHBACK_MS * 10))
    const store = redisPushbackStore({ client: fixture.client, prefix, wallNow: () => EPOCH })
    expect(await store.heldFor('k', 0)).toBe(MAX_PUSHBACK_MS * 10)
  })

  it('rejects with a soft store_unavailable past timeoutMs when Redis is silent', async () => {
    const clock = manualClock()
    const server = await startRedisServer()
    const client = new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
    await client.connect()
    try {
      const store = redisPushbackStore({ client, clock, timeoutMs: 100 })
      await client.client('PAUSE', 2000, 'ALL')
      const read = expect(store.heldFor('k', 0)).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
      const hold = expect(store.hold('k', 1_000, 0)).rejects.toMatchObject({ code: 'store_unavailable' })
      await clock.advance(100)
      await Promise.all([read, hold])
    } finally {
      client.disconnect()
      await server.close()
    }
  })

  it('refuses bad options, naming them', () => {
    expect(() => redisPushbackStore({ client: {} as never })).toThrow(OptionsError)
    expect(() => redisPushbackStore({ client: fixture.client, prefix: 'a b' })).toThrow(/option prefix/)
    expect(() => redisPushbackStore({ client: fixture.client, timeoutMs: 0 })).toThrow(/option timeoutMs/)
    expect(() => redisPushbackStore({ client: fixture.client, breakerTtlMs: 5 } as never)).toThrow(/breakerTtlMs/)
  })
})
