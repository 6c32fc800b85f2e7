import { randomUUID } from 'node:crypto'
import { parseOptions } from '@shallot/core'
import { refineWallNow, wallNowOf, wallNowShape } from '@shallot/core/kit'
import { type BeginResult, parseStoredResult, type SyncIdempotencyStore } from '@shallot/idempotency'
import { z } from 'zod'
import { connectionShape, exactlyOnePlace, openConnection, type SqliteDatabase } from './sqlite-connection.js'

export type { SqliteDatabase } from './sqlite-connection.js'

/**
 * Options of {@link sqliteStore}: give `path` or an open `database`, not both.
 *
 * @example
 * sqliteStoreOptionsSchema.parse({ path: 'agent-state.db', tableName: 'idempotency' })
 */
export const sqliteStoreOptionsSchema = z
  .object({
    /** `path` or `database`, the table of records (default `shallot_idempotency`), `busyTimeoutMs`: see connectionShape. */
    ...connectionShape('shallot_idempotency'),
    /** `wallNow`: wall-clock milliseconds for leases and TTLs, the one clock all processes on the file share. Default `Date.now`. */
    ...wallNowShape,
  })
  .strict()
  .superRefine(refineWallNow)
  .refine(...exactlyOnePlace())

export type SqliteStoreOptions = z.input<typeof sqliteStoreOptionsSchema>

/** A durable idempotency store on one SQLite file. Every method answers synchronously (better-sqlite3 is synchronous). */
export interface SqliteStore extends SyncIdempotencyStore {
  /** The connection in use. */
  readonly database: SqliteDatabase
  /** Takes over an unknown outcome for reconciliation (see `IdempotencyStore.reclaim`). */
  reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined
  /** Closes the connection if the store opened it (from `path`); a connection passed in stays open. */
  close(): void
}

/** A row as read: SQLite columns hold whatever was written into them, so every field is checked before use. */
interface Row {
  args_hash: unknown
  state: unknown
  token: unknown
  lease_until: unknown
  expires_at: unknown
  result: unknown
}

/** A row that passed {@link rowProblem}. */
interface GoodRow extends Row {
  args_hash: string
  state: 'pending' | 'done' | 'unknown'
  token: string
  lease_until: number
  expires_at: number
  result: string | null
}

const STATES: ReadonlySet<unknown> = new Set(['pending', 'done', 'unknown'])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

/** What is wrong with a row, or `undefined` for one this store could have written. */
function rowProblem(row: Row): string | undefined {
  if (typeof row.args_hash !== 'string' || row.args_hash === '') return 'args_hash is not a non-empty string'
  if (!STATES.has(row.state)) return 'state is not pending, done or unknown'
  if (typeof row.token !== 'string' || !UUID.test(row.token)) return 'token is not a token this store hands out'
  if (!isTime(row.lease_until)) return 'lease_until is not a finite number'
  if (!isTime(row.expires_at)) return 'expires_at is not a finite number'
  if (row.state !== 'done' && row.result !== null) return `a ${row.state} row holds a result`
  return undefined
}

/** Expired rows dropped per new record: enough to keep up, small enough to keep `begin` short. */
const SWEEP_BATCH = 16

/**
 * The idempotency store protocol on better-sqlite3 (12.x): WAL journal, a busy timeout, and
 * `BEGIN IMMEDIATE` around `begin`, so several processes can share one file safely and records
 * survive restarts. Leases and TTLs run on the wall clock (`Date.now`), the only clock processes
 * share: keep the machines' clocks in sync if the file is on shared storage (better: don't).
 * Every row is validated when read: one that is not well-formed (a hand edit, another writer, a
 * bad migration) answers `unknown (corrupt)` and stays, so `idempotency()` refuses the call with
 * `outcome_unknown` until the row expires or someone deletes it; it is never replayed or re-run.
 * `reclaim` takes over an unknown outcome in one `BEGIN IMMEDIATE` transaction, for reconciliation.
 *
 * @example
 * const store = sqliteStore({ path: 'agent-state.db' })
 * const stack = createStack({ tools: [chargeCard], middleware: [idempotency({ store })] })
 */
export function sqliteStore(options: SqliteStoreOptions): SqliteStore {
  const opts = parseOptions('sqliteStore()', sqliteStoreOptionsSchema, options)
  const now = wallNowOf(opts) ?? Date.now
  const table = `"${opts.tableName}"`
  const { db, owned } = openConnection(opts, {
    durable: true,
    tables: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (
          key TEXT PRIMARY KEY NOT NULL,
          args_hash TEXT NOT NULL,
          state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'unknown')),
          token TEXT NOT NULL,
          lease_until INTEGER NOT NULL,
          expires_at INTEGER NOT NULL,
          result TEXT
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS "${opts.tableName}_expires_at" ON ${table} (expires_at);`,
      ),
  })

  const select = db.prepare<[string], Row>(`SELECT args_hash, state, token, lease_until, expires_at, result FROM ${table} WHERE key = ?`)
  const insert = db.prepare<[string, string, string, number, number]>(
    `INSERT OR REPLACE INTO ${table} (key, args_hash, state, token, lease_until, expires_at, result) VALUES (?, ?, 'pending', ?, ?, ?, NULL)`,
  )
  const sweep = db.prepare<[number]>(
    `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} WHERE expires_at <= ? LIMIT ${SWEEP_BATCH})`,
  )
  // Every settle is one statement (atomic on its own) that matches only a live pending row of this token.
  const owner = `key = @key AND token = @token AND state = 'pending' AND expires_at > @now`
  const toDone = db.prepare(`UPDATE ${table} SET state = 'done', result = @result, expires_at = @expiresAt WHERE ${owner}`)
  const toUnknown = db.prepare(`UPDATE ${table} SET state = 'unknown', expires_at = @expiresAt WHERE ${owner}`)
  const remove = db.prepare(`DELETE FROM ${table} WHERE ${owner}`)
  const retake = db.prepare(
    `UPDATE ${table} SET state = 'pending', token = @token, lease_until = @leaseUntil, expires_at = @expiresAt WHERE key = @key`,
  )

  // Only a live, well-formed record of these arguments that begin would answer unknown (recorded or lease_expired).
  const reclaimTx = db.transaction((key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined => {
    const at = now()
    const row = select.get(key)
    if (row === undefined || rowProblem(row) !== undefined) return undefined
    const good = row as GoodRow
    if (good.expires_at <= at || good.args_hash !== argsHash) return undefined
    if (good.state !== 'unknown' && !(good.state === 'pending' && good.lease_until <= at)) return undefined
    const token = randomUUID()
    retake.run({ key, token, leaseUntil: at + leaseMs, expiresAt: at + leaseMs + ttlMs })
    return token
  })

  const beginTx = db.transaction((key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult => {
    const at = now()
    const row = select.get(key)
    if (row === undefined || (isTime(row.expires_at) && row.expires_at <= at)) {
      sweep.run(at)
      const token = randomUUID()
      insert.run(key, argsHash, token, at + leaseMs, at + leaseMs + ttlMs)
      return { status: 'new', token }
    }
    // A row this store cannot read is never replaced or replayed: it may stand for a write that happened.
    const problem = rowProblem(row)
    if (problem !== undefined) return { status: 'unknown', reason: 'corrupt', problem }
    const good = row as GoodRow
    if (good.args_hash !== argsHash) return { status: 'mismatch' }
    if (good.state === 'done') {
      const parsed = parseStoredResult(good.result)
      return 'result' in parsed
        ? { status: 'done', result: parsed.result }
        : { status: 'unknown', reason: 'corrupt', problem: parsed.problem }
    }
    if (good.state === 'unknown') return { status: 'unknown', reason: 'recorded' }
    return good.lease_until > at ? { status: 'in_flight' } : { status: 'unknown', reason: 'lease_expired' }
  })

  return {
    database: db,
    begin(key, argsHash, leaseMs, ttlMs) {
      // IMMEDIATE takes the write lock before reading, so two processes cannot both see the key free.
      return beginTx.immediate(key, argsHash, leaseMs, ttlMs)
    },
    complete(key, token, result, ttlMs) {
      const at = now()
      return toDone.run({ key, token, now: at, result: JSON.stringify(result), expiresAt: at + ttlMs }).changes === 1
    },
    release(key, token) {
      return remove.run({ key, token, now: now() }).changes === 1
    },
    markUnknown(key, token, ttlMs) {
      const at = now()
      return toUnknown.run({ key, token, now: at, expiresAt: at + ttlMs }).changes === 1
    },
    reclaim(key, argsHash, leaseMs, ttlMs) {
      return reclaimTx.immediate(key, argsHash, leaseMs, ttlMs)
    },
    close() {
      if (owned && db.open) db.close()
    },
  }
}
