import { createStack, defineTool, type Logger } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { idempotencyStoreContract, type RawRecord } from '@shallot/idempotency/contract'
import { manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisKeys, redisStores } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'

const fixture = useRedis()
let client: Redis
beforeAll(() => {
  client = fixture.client
})
let prefixes = 0
const freshPrefix = () => `t${++prefixes}`

function spyLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = []
  const logger = {
    warnings,
    debug: () => {},
    info: () => {},
    warn: (_: object, msg?: string) => void warnings.push(msg ?? ''),
    error: () => {},
    child: () => logger,
  }
  return logger
}

const STATE_CODES: Record<string, string> = { pending: 'p', done: 'd', unknown: 'u' }

/** The contract's hook: writes the record's hash fields as they are (Redis keeps text: NaN becomes 'NaN'). */
function rawWriter(prefix: string) {
  return async (key: string, raw: RawRecord) => {
    const { record } = redisKeys(prefix).idempotency(key)
    const state = typeof raw.state === 'string' && Object.hasOwn(STATE_CODES, raw.state) ? STATE_CODES[raw.state] : raw.state
    const fields = { a: raw.argsHash, s: state, t: raw.token, l: raw.leaseUntil, e: raw.expiresAt, r: raw.result }
    const present = Object.entries(fields).flatMap(([field, value]) => (value === undefined ? [] : [field, String(value)]))
    await client
      .multi()
      .del(record)
      .hset(record, ...present)
      .exec()
  }
}

describe('redis idempotency store: the store contract, on a real Redis', () => {
  // The contract moves time itself; `now` puts the scripts on its clock instead of Redis's TIME.
  const cases = idempotencyStoreContract((now) => {
    const prefix = freshPrefix()
    return { store: redisStores({ client, prefix, now }).idempotency, writeRaw: rawWriter(prefix) }
  })
  for (const c of cases) it(c.name, () => c.run())
})

describe('redis idempotency store: beyond the contract', () => {
  const LEASE = 1000
  const TTL = 60_000

  it('fences out an owner whose lease ran out once another worker was told unknown: the answer never flips', async () => {
    const clock = manualClock()
    const store = redisStores({ client, prefix: freshPrefix(), wallNow: clock.now }).idempotency
    const begun = await store.begin('s k', 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(begun.status)
    await clock.advance(LEASE)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
    expect(await store.complete('s k', begun.token, { value: 'late' }, TTL)).toBe(false)
    expect(await store.release('s k', begun.token)).toBe(false)
    expect(await store.markUnknown('s k', begun.token, TTL)).toBe(false)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
  })

  it('hands out tokens that only grow, per scope, across releases', async () => {
    const store = redisStores({ client, prefix: freshPrefix() }).idempotency
    const tokens: number[] = []
    for (let i = 0; i < 5; i++) {
      const begun = await store.begin('s k', 'h', LEASE, TTL)
      if (begun.status !== 'new') throw new Error(begun.status)
      tokens.push(Number(begun.token))
      await store.release('s k', begun.token)
    }
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
    expect(new Set(tokens).size).toBe(5)
  })

  it('keeps a record and its fencing counter under one hash tag, prefix:{scope}:…', async () => {
    const prefix = freshPrefix()
    const store = redisStores({ client, prefix }).idempotency
    await store.begin('tenant-a order-42', 'h', LEASE, TTL)
    const keys = (await client.keys(`${prefix}:*`)).sort()
    expect(keys).toEqual([`${prefix}:{tenant-a}:fence`, `${prefix}:{tenant-a}:idem:order-42`])
    expect(redisKeys(prefix).idempotency('tenant-a order-42')).toEqual({ record: keys[1], fence: keys[0] })
  })

  it('escapes braces in a scope so its hash tag ends where the scope ends and no two scopes share a key', () => {
    const keys = redisKeys('p')
    expect(keys.idempotency('a}:idem:b c').record).toBe('p:{a%7d:idem:b}:idem:c')
    expect(keys.idempotency('a b}:idem:c').record).toBe('p:{a}:idem:b}:idem:c')
    expect(keys.idempotency('{x} k').fence).toBe('p:{%7bx%7d}:fence')
  })

  it('lets records expire in Redis itself (PEXPIRE), so nothing outlives lease + TTL', async () => {
    const prefix = freshPrefix()
    const store = redisStores({ client, prefix }).idempotency
    await store.begin('s k', 'h', 1000, 2000)
    const ttl = await client.pttl(`${prefix}:{s}:idem:k`)
    expect(ttl).toBeGreaterThan(2000)
    expect(ttl).toBeLessThanOrEqual(3000)
  })

  it('answers a corrupt record as unknown (corrupt), logs its Redis key, and leaves it in place', async () => {
    const prefix = freshPrefix()
    const logger = spyLogger()
    const store = redisStores({ client, prefix, logger }).idempotency
    const record = `${prefix}:{s}:idem:k`
    await client.hset(record, { a: 'h', s: 'weird', t: '1' })
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({
      status: 'unknown',
      reason: 'corrupt',
      problem: expect.stringContaining('state'),
    })
    expect(await client.hgetall(record)).toEqual({ a: 'h', s: 'weird', t: '1' })
    expect(logger.warnings).toEqual([expect.stringContaining('corrupt')])
  })

  it('answers a record key that holds another Redis type (a string, a list) as corrupt, not as a Redis error', async () => {
    const prefix = freshPrefix()
    const store = redisStores({ client, prefix }).idempotency
    await client.set(`${prefix}:{s}:idem:a`, '{"value":"charged"}')
    await client.rpush(`${prefix}:{s}:idem:b`, 'charged')
    expect(await store.begin('s a', 'h', LEASE, TTL)).toEqual({
      status: 'unknown',
      reason: 'corrupt',
      problem: 'the record is a string, not a hash',
    })
    expect(await store.begin('s b', 'h', LEASE, TTL)).toEqual({
      status: 'unknown',
      reason: 'corrupt',
      problem: 'the record is a list, not a hash',
    })
  })

  it('refuses, through a real stack, a write whose stored result was overwritten, and the charge does not run again', async () => {
    let charges = 0
    const charge = defineTool({
      name: 'charge_card',
      description: 'charge',
      input: z.object({ amount: z.number() }),
      execute: () => ({ chargeId: `ch_${++charges}` }),
    })
    const prefix = freshPrefix()
    const stack = createStack({
      tools: [charge],
      middleware: [idempotency({ store: redisStores({ client, prefix }).idempotency, key: () => 'order-1' })],
    })
    const call = { id: 'c1', name: 'charge_card', args: { amount: 5 } }
    await stack.dispatch(call)
    for (const corrupt of ['"charged"', 'null', '42', '[]', 'true', '{"x":1}', '{"value": 1', '{"value": 1, "extra": true}']) {
      await client.hset(`${prefix}:{default}:idem:order-1`, 'r', corrupt)
      const again = await stack.dispatch(call)
      expect(again.error?.code, corrupt).toBe('outcome_unknown')
    }
    expect(charges).toBe(1)
  })

  it('replays through a real stack: two stacks (two workers) on one Redis run a write once', async () => {
    const runs = { count: 0 }
    const charge = defineTool({
      name: 'charge_card',
      description: 'charge',
      input: z.object({ amount: z.number() }),
      effect: 'write',
      execute: ({ amount }) => {
        runs.count++
        return { charged: amount }
      },
    })
    const prefix = freshPrefix()
    const stacks = [1, 2].map(() =>
      createStack({
        tools: [charge],
        middleware: [idempotency({ store: redisStores({ client, prefix }).idempotency, key: () => 'order-1' })],
      }),
    )
    const first = await stacks[0]?.dispatch({ id: 'c1', name: 'charge_card', args: { amount: 5 } })
    const second = await stacks[1]?.dispatch({ id: 'c2', name: 'charge_card', args: { amount: 5 } })
    expect(first).toMatchObject({ ok: true, replayed: false, value: { charged: 5 } })
    expect(second).toMatchObject({ ok: true, replayed: true, value: { charged: 5 } })
    expect(runs.count).toBe(1)
  })

  it('survives a flushed script cache (as after a Redis restart) by sending the scripts again', async () => {
    const store = redisStores({ client, prefix: freshPrefix() }).idempotency
    await store.begin('s a', 'h', LEASE, TTL)
    await client.script('FLUSH')
    expect(await store.begin('s b', 'h', LEASE, TTL)).toMatchObject({ status: 'new' })
  })

  it('warns once at construction when the client would queue commands while Redis is away', () => {
    const logger = spyLogger()
    const queued = new Redis(fixture.server.url, { lazyConnect: true })
    redisStores({ client: queued, logger })
    expect(logger.warnings).toEqual([expect.stringContaining('enableOfflineQueue: false')])
    queued.disconnect()
    const quiet = spyLogger()
    redisStores({ client, logger: quiet })
    expect(quiet.warnings).toEqual([])
  })

  it('clears its per-operation deadline once Redis answers, leaving no sleep behind', async () => {
    const clock = manualClock()
    const store = redisStores({ client, prefix: freshPrefix(), clock }).idempotency
    await store.begin('s k', 'h', LEASE, TTL)
    expect(clock.pending).toBe(0)
  })
})
