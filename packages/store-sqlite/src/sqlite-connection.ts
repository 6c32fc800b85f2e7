import Database from 'better-sqlite3'
import { z } from 'zod'

/** An open better-sqlite3 connection (an interface, so declarations can name it). */
export interface SqliteDatabase extends Database.Database {}

const isFunction = (value: unknown) => typeof value === 'function'
const isDatabase = (value: unknown) =>
  typeof value === 'object' &&
  value !== null &&
  isFunction((value as SqliteDatabase).prepare) &&
  isFunction((value as SqliteDatabase).pragma)

/**
 * The options every SQLite store takes for its file: `path` or an open `database` (see {@link exactlyOnePlace}),
 * the table it keeps (created when missing, `defaultTable` by default), and how long a statement waits for another
 * process's write lock before failing (default 5000 ms).
 */
export function connectionShape(defaultTable: string) {
  return {
    /** The database file, created when missing (its folder must exist). Every process that shares it shares the store. */
    path: z.string().min(1).optional(),
    /** An open better-sqlite3 connection instead of `path`; the store never closes it. */
    database: z.custom<SqliteDatabase>(isDatabase, 'must be an open better-sqlite3 Database').optional(),
    tableName: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a plain SQL identifier: letters, digits and "_", not starting with a digit')
      .default(defaultTable),
    busyTimeoutMs: z.number().int().nonnegative().default(5000),
  }
}

/** The refinement of a store's options, as `.refine(...exactlyOnePlace())` takes it: exactly one of `path` and `database`. */
export function exactlyOnePlace(): [(o: { path?: unknown; database?: unknown }) => boolean, { message: string; path: string[] }] {
  return [
    (o) => (o.path === undefined) !== (o.database === undefined),
    { message: 'give either path or database (exactly one)', path: ['path'] },
  ]
}

/** A store's connection: the one it was given, or one it opened on `path` (and closes); `made`: what `tables` returned. */
export interface Connection<T> {
  readonly db: SqliteDatabase
  /** Whether the store opened it, so `close()` ends it. */
  readonly owned: boolean
  readonly made: T
}

/**
 * Opens (or takes) the store's connection and prepares it: the write-lock wait, WAL, and for a `durable` store on a
 * connection it opened, a flush per commit. `setup` creates the store's tables; if any of it throws, a connection the
 * store opened is closed before the error goes on.
 */
export function openConnection<T>(
  opts: { path?: string | undefined; database?: SqliteDatabase | undefined; busyTimeoutMs: number },
  setup: { durable: boolean; tables: (db: SqliteDatabase) => T },
): Connection<T> {
  const owned = opts.database === undefined
  const db = opts.database ?? new Database(opts.path as string)
  try {
    db.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs}`)
    db.exec('PRAGMA journal_mode = WAL')
    if (owned && setup.durable) db.exec('PRAGMA synchronous = FULL')
    return { db, owned, made: setup.tables(db) }
  } catch (err) {
    if (owned) db.close()
    throw err
  }
}
