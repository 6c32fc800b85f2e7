import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStack, defineTool, OptionsError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { idempotencyStoreContract, type RawRecord } from '@shallot/idempotency/contract'
import { manualClock } from '@shallot/testing'
import Database from 'better-sqlite3'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type SqliteStore, sqliteStore } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-sqlite-unit-'))
const opened: SqliteStore[] = []
let files = 0
const file = () => join(dir, `store-${++files}.db`)
const open = (options: Parameters<typeof sqliteStore>[0]) => {
  const store = sqliteStore(options)
  opened.push(store)
  return store
}
afterEach(() => {
  for (const store of opened.splice(0)) store.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A column value as SQLite can hold it: a number it cannot store (NaN, Infinity) as its text, absent as NULL. */
function column(value: unknown): string | number | null {
  if (value === undefined || value === null) return null
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value)
  return typeof value === 'string' ? value : String(value)
}

/** The contract's hook: writes a row as it is, past the table's CHECK on state, as another writer could. */
function rawWriter(store: SqliteStore, table = 'shallot_idempotency') {
  return (key: string, record: RawRecord) => {
    const db = store.database
    db.pragma('ignore_check_constraints = ON')
    try {
      db.prepare(
        `INSERT OR REPLACE INTO "${table}" (key, args_hash, state, token, lease_until, expires_at, result) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        key,
        column(record.argsHash),
        column(record.state),
        column(record.token),
        column(record.leaseUntil),
        column(record.expiresAt),
        column(record.result),
      )
    } finally {
      db.pragma('ignore_check_constraints = OFF')
    }
  }
}

describe('sqliteStore: the store contract', () => {
  describe('in memory', () => {
    const cases = idempotencyStoreContract((now) => {
      const store = open({ path: ':memory:', wallNow: now })
      return { store, writeRaw: rawWriter(store) }
    })
    for (const c of cases) it(c.name, () => c.run())
  })
  describe('on a file', () => {
    const cases = idempotencyStoreContract((now) => {
      const store = open({ path: file(), now }) // the deprecated name of wallNow still works
      return { store, writeRaw: rawWriter(store) }
    })
    for (const c of cases) it(c.name, () => c.run())
  })
})

describe('sqliteStore', () => {
  it('keeps records across a close and reopen of the file', async () => {
    const path = file()
    const before = sqliteStore({ path })
    const begun = before.begin('s k', 'h', 1000, 60_000)
    if (begun.status !== 'new') throw new Error('expected a new record')
    before.complete('s k', begun.token, { value: { chargeId: 'ch_1' } }, 60_000)
    before.close()
    const after = open({ path })
    expect(after.begin('s k', 'h', 1000, 60_000)).toEqual({ status: 'done', result: { value: { chargeId: 'ch_1' } } })
  })

  it('lets two connections on one file see each other’s claims at once', () => {
    const path = file()
    const a = open({ path })
    const b = open({ path })
    const begun = a.begin('s k', 'h', 60_000, 60_000)
    expect(begun.status).toBe('new')
    expect(b.begin('s k', 'h', 60_000, 60_000)).toEqual({ status: 'in_flight' })
    if (begun.status === 'new') a.markUnknown('s k', begun.token, 60_000)
    expect(b.begin('s k', 'h', 60_000, 60_000)).toEqual({ status: 'unknown', reason: 'recorded' })
  })

  it('puts a file database in WAL mode with a busy timeout', () => {
    const store = open({ path: file(), busyTimeoutMs: 1234 })
    expect(store.database.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(store.database.pragma('busy_timeout', { simple: true })).toBe(1234)
  })

  it('keeps tables apart: two stores with different table names share a file without sharing records', () => {
    const path = file()
    const a = open({ path, tableName: 'tenant_a' })
    const b = open({ path, tableName: 'tenant_b' })
    expect(a.begin('s k', 'h', 1000, 60_000).status).toBe('new')
    expect(b.begin('s k', 'h', 1000, 60_000).status).toBe('new')
  })

  it('uses a connection it was given and leaves it open on close', () => {
    const database = new Database(':memory:')
    const store = sqliteStore({ database })
    expect(store.begin('s k', 'h', 1000, 60_000).status).toBe('new')
    store.close()
    expect(database.open).toBe(true)
    database.close()
  })

  it('refuses bad options by name: no path or both, and a table name that is not a plain identifier', () => {
    expect(() => sqliteStore({})).toThrow(OptionsError)
    expect(() => sqliteStore({ path: ':memory:', database: new Database(':memory:') })).toThrow(/exactly one/)
    expect(() => sqliteStore({ path: ':memory:', tableName: 'x; DROP TABLE y' })).toThrow(/tableName/)
  })

  it('drives the TTL boundary of a stack from the clock it is given: replays just before, runs just after', async () => {
    const clock = manualClock(1_000_000)
    let charges = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ card: z.string(), amount: z.number() }),
      execute: () => ({ chargeId: `ch_${++charges}` }),
    })
    const store = open({ path: file(), now: clock.now })
    const stack = createStack({ clock, tools: [chargeCard], middleware: [idempotency({ store, ttlMs: 60_000 })] })
    const call = { id: 'c', name: 'charge_card', args: { card: 'c1', amount: 5 } }
    await stack.dispatch(call)
    await clock.advance(59_999)
    expect(await stack.dispatch(call)).toMatchObject({ replayed: true, value: { chargeId: 'ch_1' } })
    await clock.advance(1)
    expect(await stack.dispatch(call)).toMatchObject({ replayed: false, value: { chargeId: 'ch_2' } })
  })

  it('refuses a write whose row was edited to hold the string "charged", and the charge does not run again', async () => {
    let charges = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ card: z.string(), amount: z.number() }),
      execute: () => ({ chargeId: `ch_${++charges}` }),
    })
    const store = open({ path: file() })
    const stack = createStack({ tools: [chargeCard], middleware: [idempotency({ store })] })
    const call = { id: 'c', name: 'charge_card', args: { card: 'c1', amount: 5 } }
    await stack.dispatch(call)
    store.database.prepare(`UPDATE shallot_idempotency SET result = '"charged"'`).run()
    const again = await stack.dispatch(call)
    expect(again).toMatchObject({ ok: false, error: { code: 'outcome_unknown' } })
    expect(again.trace.map((e) => e.type)).toEqual(['idempotency.corrupt', 'idempotency.refused'])
    expect(charges).toBe(1)
    // The row stays as it was, for a human to look at; the sweep leaves it too.
    const rows = store.database.prepare('SELECT result FROM shallot_idempotency').all()
    expect(rows).toEqual([{ result: '"charged"' }])
  })

  it('sweeps expired records as new ones arrive, so the file does not grow without bound', () => {
    let now = 0
    const store = open({ path: file(), now: () => now })
    for (let i = 0; i < 40; i++) store.begin(`s k${i}`, 'h', 10, 10)
    now = 1000
    for (let i = 0; i < 5; i++) store.begin(`s fresh${i}`, 'h', 10, 10)
    const rows = (store.database.prepare('SELECT count(*) AS n FROM shallot_idempotency').get() as { n: number }).n
    expect(rows).toBe(5)
  })
})
