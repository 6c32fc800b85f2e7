import { parseOptions } from '@shallot/core'
import { refineWallNow, wallNowOf, wallNowShape } from '@shallot/core/kit'
import { MAX_PUSHBACK_MS, type PushbackStore } from '@shallot/rate-limit'
import { z } from 'zod'
import { connectionShape, exactlyOnePlace, openConnection } from './sqlite-connection.js'

/**
 * Options of {@link sqlitePushbackStore}: give `path` or an open `database`, not both.
 *
 * @example
 * sqlitePushbackStoreOptionsSchema.parse({ path: 'agent-state.db' })
 */
export const sqlitePushbackStoreOptionsSchema = z
  .object({
    /** `path` or `database`, the table of holds (default `shallot_pushback`), `busyTimeoutMs`: see connectionShape. */
    ...connectionShape('shallot_pushback'),
    /** `wallNow`: wall-clock milliseconds, the one clock all processes on the file share. Default `Date.now`. */
    ...wallNowShape,
  })
  .strict()
  .superRefine(refineWallNow)
  .refine(...exactlyOnePlace())

/** What {@link sqlitePushbackStore} accepts. */
export type SqlitePushbackStoreOptions = z.input<typeof sqlitePushbackStoreOptionsSchema>

/** The pushback's store on SQLite: `hold` and `heldFor` answer synchronously; `close()` ends a connection it opened. */
export interface SqlitePushbackStore extends PushbackStore {
  hold(key: string, ms: number): void
  heldFor(key: string): number
  close(): void
}

/**
 * A provider's pushback shared by the processes of one machine (`rateLimit({ pushback })`), in one SQLite
 * table: a row per key with when its hold ends, in wall-clock ms. A hold is one statement (an upsert, atomic
 * under the file's write lock): a hold in place that ends later stays, unless it is not a number or ends
 * further ahead than `MAX_PUSHBACK_MS`, which is replaced. Answers synchronously, so the layer reads it
 * without a timer. A row that is not a number reads as a store failure (the layer's `onStoreFailure`).
 *
 * @example
 * const pushback = sqlitePushbackStore({ path: 'agent-state.db' })
 * createAgent({ model, tools, modelMiddleware: [retry(), rateLimit({ limit: 500, perMs: 60_000, pushback })] })
 */
export function sqlitePushbackStore(options: SqlitePushbackStoreOptions): SqlitePushbackStore {
  const opts = parseOptions('sqlitePushbackStore()', sqlitePushbackStoreOptionsSchema, options)
  const now = wallNowOf(opts) ?? Date.now
  const table = `"${opts.tableName}"`
  // A hold is a hint the fleet can lose: no flush per commit.
  const { db, owned } = openConnection(opts, {
    durable: false,
    tables: (db) => db.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY NOT NULL, ends_at REAL NOT NULL) WITHOUT ROWID`),
  })
  const upsert = db.prepare<{ key: string; ends: number; now: number; longest: number }>(
    `INSERT INTO ${table} (key, ends_at) VALUES (@key, @ends) ON CONFLICT (key) DO UPDATE SET ends_at = CASE
      WHEN typeof(ends_at) IN ('real', 'integer') AND ends_at >= excluded.ends_at AND ends_at - @now <= @longest
      THEN ends_at ELSE excluded.ends_at END`,
  )
  const select = db.prepare<[string], { ends_at: unknown }>(`SELECT ends_at FROM ${table} WHERE key = ?`)

  return {
    hold(key, ms) {
      const at = now()
      upsert.run({ key, ends: at + ms, now: at, longest: MAX_PUSHBACK_MS })
    },
    heldFor(key) {
      const row = select.get(key)
      if (row === undefined) return 0
      const { ends_at: ends } = row
      if (typeof ends !== 'number' || !Number.isFinite(ends)) {
        throw new TypeError(`sqlitePushbackStore: the hold of ${JSON.stringify(key)} is ${String(ends)}, not a time`)
      }
      return Math.max(ends - now(), 0)
    },
    close() {
      if (owned && db.open) db.close()
    },
  }
}
