import { createStack, defineTool, type Logger } from '@shallot/core'
import { type IdempotencyStore, idempotency } from '@shallot/idempotency'
import { idempotencyStoreContract, type RawRecord } from '@shallot/idempotency/contract'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { usePostgres } from './test-support/postgres-fixture.js'
import { spyLogger } from './test-support/spy-logger.js'

const pg = usePostgres()
const LEASE = 1000
const TTL = 60_000

/** The record's fields by column, and whether the column is a `bigint` (the others are `text`). */
const COLUMNS = [
  ['args_hash', 'argsHash', false],
  ['state', 'state', false],
  ['token', 'token', true],
  ['lease_until', 'leaseUntil', true],
  ['expires_at', 'expiresAt', true],
  ['result', 'result', false],
] as const
const fitsBigint = (value: unknown) =>
  (typeof value === 'number' && Number.isSafeInteger(value)) || (typeof value === 'string' && /^-?\d{1,18}$/.test(value))

/**
 * The contract's hook: writes the record into the row as it is. PostgreSQL's column types are
 * constraints no statement can pass, so a value a column cannot hold (a NaN token, an expiry of
 * 'tomorrow', no arguments hash) first loosens that column of this test's table to nullable `text`,
 * as a bad migration could have; the store reads every column as text and validates it.
 */
function rawWriter(tablePrefix: string) {
  const table = `"${tablePrefix}idempotency"`
  return async (key: string, record: RawRecord) => {
    const values: Array<string | null> = []
    for (const [column, field, bigint] of COLUMNS) {
      const value = record[field]
      if (value === undefined) await pg.pool.query(`ALTER TABLE ${table} ALTER COLUMN ${column} DROP NOT NULL`)
      else if (bigint && !fitsBigint(value))
        await pg.pool.query(`ALTER TABLE ${table} ALTER COLUMN ${column} TYPE text USING ${column}::text`)
      values.push(value === undefined ? null : String(value))
    }
    const names = COLUMNS.map(([column]) => column)
    await pg.pool.query(
      `INSERT INTO ${table} (key, ${names.join(', ')}) VALUES ($1, ${names.map((_, i) => `$${i + 2}`).join(', ')})
      ON CONFLICT (key) DO UPDATE SET ${names.map((n) => `${n} = EXCLUDED.${n}`).join(', ')}`,
      [key, ...values],
    )
  }
}

describe('postgres idempotency store: the store contract, on a real PostgreSQL', () => {
  // The contract moves time itself; `now` puts the statements on its clock instead of the server's.
  const cases = idempotencyStoreContract(async (now) => {
    const stores = await pg.stores({ now })
    return { store: stores.idempotency, writeRaw: rawWriter(stores.tablePrefix) }
  })
  for (const c of cases) it(c.name, () => c.run())
})

/** A stack with one write tool whose executions are counted, on a fresh table prefix. */
async function chargeStack(logger: Logger = spyLogger()) {
  const stores = await pg.stores({ logger })
  const table = `"${stores.tablePrefix}idempotency"`
  const runs = { count: 0 }
  let value: unknown = { charged: 5 }
  const charge = defineTool({
    name: 'charge_card',
    description: 'charge',
    input: z.object({ order: z.string() }),
    effect: 'write',
    execute: () => {
      runs.count++
      return value
    },
  })
  const stack = createStack({
    tools: [charge],
    middleware: [idempotency({ store: stores.idempotency, key: (_ctx, args) => (args as { order: string }).order })],
  })
  const call = (order: string, id = 'c') => stack.dispatch({ id, name: 'charge_card', args: { order } })
  const setValue = (next: unknown) => {
    value = next
  }
  return { stores, table, runs, call, setValue }
}

// The shared contract plants its hostile records above; these are the rows only this store's format allows.
describe('postgres idempotency store: corrupt rows are refused as outcome_unknown, never replayed, never run again', () => {
  it('refuses a done record whose result has a field next to value, and logs the key', async () => {
    const logger = spyLogger()
    const { table, runs, call } = await chargeStack(logger)
    expect(await call('o-1')).toMatchObject({ ok: true, replayed: false })
    await pg.pool.query(`UPDATE ${table} SET result = $1`, ['{"value": {"charged": 5}, "extra": true}'])
    const again = await call('o-1')
    expect(again).toMatchObject({ ok: false, error: { code: 'outcome_unknown', retryable: false, safeToRepeat: false } })
    expect(await call('o-1')).toMatchObject({ ok: false, error: { code: 'outcome_unknown' } })
    expect(runs.count).toBe(1)
    expect(logger.warnings).toContainEqual({
      msg: expect.stringContaining('corrupt'),
      fields: { key: 'default o-1', problem: 'result is unexpected field "extra"' },
    })
  })

  const corruptRows: Array<[string, string]> = [
    ['a token that is not positive', 'token = -5'],
    ['a state of the wrong case', `state = 'DONE'`],
    ['a pending state with a trailing space', `state = 'pending '`],
  ]
  for (const [what, change] of corruptRows) {
    it(`refuses a record with ${what}`, async () => {
      const { table, runs, call } = await chargeStack()
      expect(await call('o-1')).toMatchObject({ ok: true })
      await pg.pool.query(`UPDATE ${table} SET ${change}`)
      expect(await call('o-1')).toMatchObject({ ok: false, error: { code: 'outcome_unknown' } })
      expect(runs.count).toBe(1)
    })
  }

  it('refuses a pending record that holds a result, and a settle by its owner changes nothing', async () => {
    const clock = manualClock()
    const stores = await pg.stores({ now: clock.now, logger: spyLogger() })
    const store = stores.idempotency
    const begun = await store.begin('s k', 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(begun.status)
    await pg.pool.query(`UPDATE "${stores.tablePrefix}idempotency" SET state = 'pending ' WHERE key = 's k'`)
    const corrupt = { status: 'unknown', reason: 'corrupt', problem: expect.stringContaining('state') }
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual(corrupt)
    expect(await store.complete('s k', begun.token, { value: 1 }, TTL)).toBe(false)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual(corrupt)
    await pg.pool.query(`UPDATE "${stores.tablePrefix}idempotency" SET state = 'pending', result = '{"value":1}' WHERE key = 's k'`)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({
      status: 'unknown',
      reason: 'corrupt',
      problem: 'a pending row holds a result',
    })
  })
})

describe('postgres idempotency store: beyond the contract', () => {
  it('replays exactly what was stored: NUL characters, lone surrogates, emoji, key order, big and tiny numbers', async () => {
    const { runs, call, setValue } = await chargeStack()
    const value = { z: 'a\u0000b', a: '\ud800 lone', emoji: '👩‍💻', n: [1e300, -0.000001, 123456789012345], nested: { b: null, a: [true] } }
    setValue(value)
    expect(await call('o-odd')).toMatchObject({ ok: true, replayed: false })
    const again = await call('o-odd')
    expect(again).toMatchObject({ ok: true, replayed: true })
    expect(again.value).toEqual(value)
    expect(runs.count).toBe(1)
  })

  it('fences out an owner whose lease ran out once another worker was told unknown: the answer never flips', async () => {
    const clock = manualClock()
    const store = (await pg.stores({ wallNow: clock.now })).idempotency
    const begun = await store.begin('s k', 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(begun.status)
    await clock.advance(LEASE)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
    expect(await store.complete('s k', begun.token, { value: 'late' }, TTL)).toBe(false)
    expect(await store.release('s k', begun.token)).toBe(false)
    expect(await store.markUnknown('s k', begun.token, TTL)).toBe(false)
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
  })

  it('hands out tokens that only grow, across keys and releases', async () => {
    const store = (await pg.stores()).idempotency
    const tokens: bigint[] = []
    for (const key of ['s a', 's b', 's a', 's c', 's a']) {
      const begun = await store.begin(key, 'h', LEASE, TTL)
      if (begun.status !== 'new') throw new Error(begun.status)
      tokens.push(BigInt(begun.token))
      await store.release(key, begun.token)
    }
    expect(tokens).toEqual([...tokens].sort((a, b) => (a < b ? -1 : 1)))
    expect(new Set(tokens).size).toBe(5)
  })

  it('treats a token that is not one of its own as stale without asking the server to cast it', async () => {
    const store = (await pg.stores()).idempotency
    const begun = await store.begin('s k', 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(begun.status)
    for (const bad of ['', 'abc', '1; DROP TABLE x', '99999999999999999999999', '-1', `${begun.token} `]) {
      expect(await store.complete('s k', bad, { value: 1 }, TTL)).toBe(false)
      expect(await store.release('s k', bad)).toBe(false)
    }
    expect(await store.begin('s k', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
  })

  it('deletes expired records: 64 on every 16th new record, and all of them on sweep()', async () => {
    const clock = manualClock()
    const stores = await pg.stores({ wallNow: clock.now })
    const table = `"${stores.tablePrefix}idempotency"`
    const count = async () => Number((await pg.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)
    for (let i = 0; i < 100; i++) await stores.idempotency.begin(`s k${i}`, 'h', LEASE, TTL)
    await clock.advance(LEASE + TTL)
    for (let i = 0; i < 11; i++) await stores.idempotency.begin(`s fresh${i}`, 'h', LEASE, TTL)
    expect(await count()).toBe(111)
    // The 112th new key sweeps: 64 of the 100 expired rows, none of the live ones.
    await stores.idempotency.begin('s fresh11', 'h', LEASE, TTL)
    expect(await count()).toBe(112 - 64)
    expect(await stores.sweep()).toEqual({ idempotency: 36, breakers: 0, checkpoints: 0, claims: 0 })
    expect(await count()).toBe(12)
  })

  it('refuses softly, naming migrate(), when the tables do not exist', async () => {
    const { postgresStores } = await import('./index.js')
    const store: IdempotencyStore = postgresStores({ pool: pg.pool, tablePrefix: 'never_migrated_' }).idempotency
    const failure = await Promise.resolve(store.begin('s k', 'h', LEASE, TTL)).catch((err: unknown) => err)
    expect(failure).toMatchObject({ code: 'store_unavailable', hint: expect.stringContaining('migrate()') })
  })
})
