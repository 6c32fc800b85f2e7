import { createRun, createStack, defineTool, OptionsError } from '@shallot/core'
import { rateLimit } from '@shallot/rate-limit'
import { rateLimitStoreContract } from '@shallot/rate-limit/contract'
import { manualClock } from '@shallot/testing'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { postgresRateLimitStore } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const fixture = usePostgres()
let prefixes = 0
const freshPrefix = () => `rl${++prefixes}_`

async function migrated(options: Omit<Parameters<typeof postgresRateLimitStore>[0], 'pool'> = {}) {
  const store = postgresRateLimitStore({ pool: fixture.pool, tablePrefix: freshPrefix(), timeoutMs: 10_000, ...options })
  await store.migrate()
  return store
}

describe('postgresRateLimitStore keeps the store contract (one statement, server time replaced by the contract clock)', () => {
  for (const c of rateLimitStoreContract((clock) => migrated({ wallNow: () => clock.now() }))) it(c.name, () => c.run())
})

const rule = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }

describe('postgresRateLimitStore', () => {
  it.each(['NaN', 'Infinity', '-Infinity'])('reads a TAT of %s as a key at rest, and overwrites it', async (corrupt) => {
    const tablePrefix = freshPrefix()
    const store = postgresRateLimitStore({ pool: fixture.pool, tablePrefix })
    await store.migrate()
    await fixture.pool.query(`INSERT INTO "${tablePrefix}rate_limits" VALUES ('k', $1::double precision, true, 0)`, [corrupt])
    expect(await store.acquire('k', rule)).toEqual({ admitted: true, waitMs: 0 })
    expect((await store.acquire('k', rule)).admitted).toBe(false)
  })

  it('a waiter cancelled before its turn gives its place back in PostgreSQL: the next caller goes at once', async () => {
    const clock = manualClock()
    const ranAt: number[] = []
    const tool = defineTool({
      name: 'lookup',
      description: 'L',
      input: z.object({}),
      effect: 'read',
      execute: () => ranAt.push(clock.now()),
    })
    const tablePrefix = freshPrefix()
    const store = await migrated({ tablePrefix, wallNow: () => 1_700_000_000_000 + clock.now() })
    const stack = createStack({
      tools: [tool],
      clock,
      middleware: [rateLimit({ limit: 1, maxWaitMs: 2000, store, storeTimeoutMs: 10_000 })],
    })
    const call = (id: string, signal?: AbortSignal) =>
      stack.dispatch({ id, name: 'lookup', args: {} }, { run: createRun(signal ? { signal } : {}) })
    await call('a')
    const controller = new AbortController()
    const reserved = new Promise<void>((resolve) => stack.on((event) => event.type === 'rate-limit.waiting' && resolve()))
    const waiting = call('b', controller.signal).catch((err: { kind?: string }) => err.kind)
    await reserved
    controller.abort()
    expect(await waiting).toBe('cancelled')
    // The refund goes to PostgreSQL unawaited: it has landed once the row's refund sequence moved.
    const seqOf = async () => (await fixture.pool.query(`SELECT seq FROM "${tablePrefix}rate_limits"`)).rows[0]?.seq
    for (let i = 0; i < 1000 && (await seqOf()) === '0'; i++);
    await clock.advance(1000)
    await call('c')
    expect(ranAt).toEqual([0, 1000])
  })

  it('migrate() gives a table made before refunds its refund sequence, keeping its rows; a garbage reservation gives nothing back', async () => {
    const tablePrefix = freshPrefix()
    await fixture.pool.query(
      `CREATE TABLE "${tablePrefix}rate_limits" (key text PRIMARY KEY, tat double precision NOT NULL, admitted boolean NOT NULL, wait_ms double precision NOT NULL)`,
    )
    const wide = { intervalMs: 1000, burst: 1, maxWaitMs: 5000 }
    const store = postgresRateLimitStore({ pool: fixture.pool, tablePrefix, wallNow: () => 1_700_000_000_000 })
    await fixture.pool.query(`INSERT INTO "${tablePrefix}rate_limits" VALUES ('k', 1700000001000, true, 0)`)
    await store.migrate()
    await store.migrate()
    const waiting = await store.acquire('k', wide)
    expect(waiting).toEqual({ admitted: true, waitMs: 1000, reservation: { tat: 1_700_000_002_000, seq: 0 } })
    for (const garbage of [
      { tat: Number.NaN, seq: 0 },
      { tat: 1_700_000_002_000, seq: 5 },
      { tat: 1e308, seq: 0 },
    ]) {
      expect(await store.refund('k', wide, garbage)).toBe(false)
    }
    expect(await store.refund('k', wide, waiting.reservation as never)).toBe(true)
    expect(await store.refund('k', wide, waiting.reservation as never)).toBe(false)
  })

  it('takes a key that looks like SQL as a key', async () => {
    const store = await migrated()
    const key = `'); DROP TABLE "x"; --`
    expect(await store.acquire(key, rule)).toEqual({ admitted: true, waitMs: 0 })
    expect((await store.acquire(key, rule)).admitted).toBe(false)
  })

  it('refuses options it cannot use, naming them', () => {
    expect(() => postgresRateLimitStore({} as never)).toThrow(OptionsError)
    expect(() => postgresRateLimitStore({} as never)).toThrow(/option pool: is required/)
    expect(() => postgresRateLimitStore({ pool: fixture.pool, tablePrefix: 'Bad-Prefix' })).toThrow(/option tablePrefix/)
  })

  it('says how to create its table when it was never migrated', async () => {
    const store = postgresRateLimitStore({ pool: fixture.pool, tablePrefix: freshPrefix() })
    await expect(store.acquire('k', rule)).rejects.toMatchObject({ code: 'store_unavailable', hint: expect.stringContaining('migrate()') })
  })

  it('rejects with a soft store_unavailable past timeoutMs when the server is silent', async () => {
    const clock = manualClock()
    const tablePrefix = freshPrefix()
    const store = await migrated({ clock, timeoutMs: 100, tablePrefix })
    const holder = await fixture.pool.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(`LOCK TABLE "${tablePrefix}rate_limits" IN ACCESS EXCLUSIVE MODE`)
      const refused = expect(store.acquire('k', rule)).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
      await clock.advance(100)
      await refused
    } finally {
      await holder.query('ROLLBACK')
      holder.release()
    }
  })

  it('a reservation answered after timeoutMs is given back once the server answers', async () => {
    const clock = manualClock()
    const tablePrefix = freshPrefix()
    const wide = { intervalMs: 1000, burst: 1, maxWaitMs: 5000 }
    const store = await migrated({ clock, timeoutMs: 100, tablePrefix, wallNow: () => 1_700_000_000_000 })
    await store.acquire('k', wide)
    const holder = await fixture.pool.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(`LOCK TABLE "${tablePrefix}rate_limits" IN ACCESS EXCLUSIVE MODE`)
      const refused = expect(store.acquire('k', wide)).rejects.toMatchObject({ code: 'store_unavailable' })
      await clock.advance(100)
      await refused
    } finally {
      await holder.query('ROLLBACK')
      holder.release()
    }
    const seqOf = async () => (await fixture.pool.query(`SELECT seq FROM "${tablePrefix}rate_limits"`)).rows[0]?.seq
    for (let i = 0; i < 1000 && (await seqOf()) === '0'; i++);
    expect(await seqOf()).toBe('1')
    expect(await store.acquire('k', wide)).toMatchObject({ admitted: true, waitMs: 1000 })
  })

  it('with the server gone, a layer failing open runs the call and one failing closed refuses it softly', async () => {
    const dead = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 500 })
    dead.on('error', () => {})
    let runs = 0
    const tool = defineTool({ name: 'lookup', description: 'L', input: z.object({}), effect: 'read', execute: () => ++runs })
    const store = postgresRateLimitStore({ pool: dead, timeoutMs: 2000 })
    const open = createStack({ tools: [tool], middleware: [rateLimit({ limit: 1, store, storeTimeoutMs: 3000 })] })
    const closed = createStack({
      tools: [tool],
      middleware: [rateLimit({ limit: 1, store, storeTimeoutMs: 3000, onStoreFailure: 'closed' })],
    })
    try {
      expect((await open.dispatch({ id: 'a', name: 'lookup', args: {} })).trace.map((e) => e.type)).toEqual(['rate-limit.store_failed'])
      expect((await closed.dispatch({ id: 'b', name: 'lookup', args: {} })).error).toMatchObject({ code: 'store_unavailable' })
      expect(runs).toBe(1)
    } finally {
      await dead.end()
    }
  })
})
