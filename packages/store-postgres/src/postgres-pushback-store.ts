import { type Logger, parseOptions, silentLogger, systemClock } from '@shallot/core'
import { type BoundedCall, boundedCall, refineWallNow, wallNowOf } from '@shallot/core/kit'
import { MAX_PUSHBACK_MS, type PushbackStore } from '@shallot/rate-limit'
import type { Pool } from 'pg'
import { z } from 'zod'
import { statement } from './postgres-store-context.js'
import { postgresStoresOptionsSchema } from './postgres-stores-options.js'
import { postgresUnavailable } from './store-unavailable.js'

const { pool, tablePrefix, timeoutMs, logger, clock, wallNow, now } = postgresStoresOptionsSchema.shape

/**
 * Options of {@link postgresPushbackStore}: `postgresStores()`'s, for the shared pushback, with a `pool` (yours to end).
 *
 * @example
 * postgresPushbackStoreOptionsSchema.safeParse({ pool, tablePrefix: 'billing_' }).success // true
 */
export const postgresPushbackStoreOptionsSchema = z
  .strictObject({ pool, tablePrefix, timeoutMs, logger, clock, wallNow, now })
  .superRefine(refineWallNow)
  .refine((o) => o.pool !== undefined, { message: 'is required: a pg.Pool (new Pool(...) from "pg")', path: ['pool'] })

/** What {@link postgresPushbackStore} accepts. */
export type PostgresPushbackStoreOptions = z.input<typeof postgresPushbackStoreOptionsSchema>

/** The pushback's store in PostgreSQL: `hold` and `heldFor` for the layer, `migrate()` to create its table once. */
export interface PostgresPushbackStore extends PushbackStore {
  hold(key: string, ms: number): Promise<void>
  heldFor(key: string): Promise<number>
  /** Creates the table `<tablePrefix>pushback` if it does not exist. */
  migrate(): Promise<void>
}

// `now` in ms: $1 when a test clock gives one, else the server's clock, one for the whole fleet.
const NOW = `COALESCE($1::double precision, extract(epoch FROM clock_timestamp()) * 1000)`

/**
 * The table of holds: when each key's hold ends, in ms. Idempotent (`IF NOT EXISTS`).
 *
 * @example
 * await pool.query(pushbackTableDdl('"shallot_pushback"'))
 */
export const pushbackTableDdl = (table: string) =>
  `CREATE TABLE IF NOT EXISTS ${table} (key text PRIMARY KEY, ends_at double precision NOT NULL)`

/**
 * The pushback store on a pool and table, with a store family's deadline, log and clock (`postgresStores()`
 * shares its own). A hold is ONE statement (`INSERT … ON CONFLICT DO UPDATE`), atomic under the row's lock:
 * a hold in place that ends later stays, unless it is not a time (`NaN`, `Infinity`) or ends further ahead
 * than `MAX_PUSHBACK_MS`, which is replaced. A read is one `SELECT` of the rest on the server's clock.
 */
export function pushbackOn(p: {
  pool: Pool
  table: string
  log: Logger
  bounded: BoundedCall
  nowParam(): string | null
}): PostgresPushbackStore {
  const { pool: db, table, log, bounded, nowParam } = p
  const holdSql = `INSERT INTO ${table} AS p (key, ends_at) VALUES ($2, ${NOW} + $3::double precision)
    ON CONFLICT (key) DO UPDATE SET ends_at = CASE
      WHEN p.ends_at >= EXCLUDED.ends_at AND p.ends_at - ${NOW} <= $4::double precision THEN p.ends_at ELSE EXCLUDED.ends_at END`
  const heldSql = `SELECT ends_at - ${NOW} AS rest FROM ${table} WHERE key = $2`
  return {
    hold(key, ms) {
      return bounded('pushback.hold', async () => void (await statement(db, holdSql, [nowParam(), key, ms, MAX_PUSHBACK_MS])))
    },
    heldFor(key) {
      return bounded('pushback.heldFor', async () => {
        const { rows } = await statement(db, heldSql, [nowParam(), key])
        const rest: unknown = rows[0]?.rest ?? 0
        if (typeof rest !== 'number' || Number.isNaN(rest) || rest === Number.POSITIVE_INFINITY) {
          log.warn({ key }, 'pushback: PostgreSQL holds something the store does not understand')
          throw postgresUnavailable('pushback.heldFor', 'PostgreSQL holds something the store does not understand')
        }
        return Math.max(rest, 0)
      })
    },
    async migrate() {
      await statement(db, pushbackTableDdl(table), [])
    },
  }
}

/**
 * A provider's pushback shared by a fleet (`rateLimit({ pushback })`, also `postgresStores().pushback`), in one
 * table: a row per key with when its hold ends, held and read by one statement each on the server's clock, so
 * every worker reads the same rest whatever its own clock says. Every operation gives up after `timeoutMs` with
 * a soft `store_unavailable`, and a row that is not a time is one too; the layer then goes on as its
 * `onStoreFailure` says. Rows of holds that ended are small and harmless; delete them at will
 * (`DELETE … WHERE ends_at < now`). Call `migrate()` once first.
 *
 * @example
 * const pushback = postgresPushbackStore({ pool })
 * await pushback.migrate()
 * createAgent({ model, tools, modelMiddleware: [retry(), rateLimit({ limit: 500, perMs: 60_000, pushback })] })
 */
export function postgresPushbackStore(options: PostgresPushbackStoreOptions): PostgresPushbackStore {
  const o = parseOptions('postgresPushbackStore()', postgresPushbackStoreOptionsSchema, options)
  const test = wallNowOf(o)
  return pushbackOn({
    pool: o.pool as Pool,
    table: `"${o.tablePrefix}pushback"`,
    log: o.logger ?? silentLogger,
    bounded: boundedCall(o.clock ?? systemClock, o.timeoutMs, postgresUnavailable, 'PostgreSQL refused or lost the query'),
    nowParam: test === undefined ? () => null : () => String(test()),
  })
}
