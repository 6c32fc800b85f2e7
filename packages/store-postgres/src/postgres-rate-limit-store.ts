import { parseOptions, silentLogger, systemClock } from '@shallot/core'
import { boundedCall, refineWallNow, wallNowOf } from '@shallot/core/kit'
import type { RateDecision, RateLimitStore, RateReservation, RateRule } from '@shallot/rate-limit'
import { z } from 'zod'
import { statement } from './postgres-store-context.js'
import { postgresStoresOptionsSchema } from './postgres-stores-options.js'
import { postgresUnavailable } from './store-unavailable.js'

const { pool, tablePrefix, timeoutMs, logger, clock, wallNow, now } = postgresStoresOptionsSchema.shape

/**
 * Options of {@link postgresRateLimitStore}: `postgresStores()`'s, for the rate limit, with a `pool` (yours to end).
 *
 * @example
 * postgresRateLimitStoreOptionsSchema.safeParse({ pool, tablePrefix: 'billing_' }).success // true
 */
export const postgresRateLimitStoreOptionsSchema = z
  .strictObject({ pool, tablePrefix, timeoutMs, logger, clock, wallNow, now })
  .superRefine(refineWallNow)
  .refine((o) => o.pool !== undefined, { message: 'is required: a pg.Pool (new Pool(...) from "pg")', path: ['pool'] })

/** What {@link postgresRateLimitStore} accepts. */
export type PostgresRateLimitStoreOptions = z.input<typeof postgresRateLimitStoreOptionsSchema>

/** The rate limit's store in PostgreSQL: `acquire` and `refund` for the layer, `migrate()` to create its table once. */
export interface PostgresRateLimitStore extends RateLimitStore {
  acquire(key: string, rule: RateRule): Promise<RateDecision>
  refund(key: string, rule: RateRule, reservation: RateReservation): Promise<boolean>
  /** Creates the table `<tablePrefix>rate_limits` if it does not exist. */
  migrate(): Promise<void>
}

// The key's TAT as the row holds it, unless it is not a finite number (a hand-edited or corrupt row): then a key at rest.
const OLD = `(CASE WHEN r.tat = 'NaN' OR r.tat = 'Infinity' OR r.tat = '-Infinity' THEN NULL ELSE r.tat END)`
// EXCLUDED.tat is now + interval (the row a new key would get); GREATEST skips a NULL.
const NOW = `(EXCLUDED.tat - $3)`
const WAIT = `GREATEST(GREATEST(${OLD}, ${NOW}) - ($4 - 1) * $3 - ${NOW}, 0)`

/** The one statement of a decision: a new key is admitted at once; an existing row is decided under its row lock. */
function acquireSql(table: string): string {
  return `INSERT INTO ${table} AS r (key, tat, admitted, wait_ms)
    VALUES ($2, COALESCE($1::double precision, extract(epoch FROM clock_timestamp()) * 1000) + $3, true, 0)
    ON CONFLICT (key) DO UPDATE SET
      tat = CASE WHEN ${WAIT} <= $5 THEN GREATEST(${OLD}, ${NOW}) + $3 ELSE GREATEST(${OLD}, ${NOW}) END,
      seq = CASE WHEN ${WAIT} <= $5 AND r.seq % 2 = 1 THEN r.seq + 1 ELSE r.seq END,
      admitted = ${WAIT} <= $5,
      wait_ms = ${WAIT}
    RETURNING admitted, wait_ms, tat, seq::double precision AS seq`
}

/**
 * The one statement of a refund, under the row's lock: only while the TAT is still the reservation's (no
 * call admitted behind it), the sequence is its own or one past (refunds of later places since, but no
 * refund-then-admit: an admission makes an odd sequence even), and the place is not due. The TAT moves back
 * one interval, never below now; the sequence goes one past the reservation's, so a second refund finds the
 * TAT moved and changes nothing. Returns a row only when the place was given back. "Still the reservation's"
 * is within 0.01 ms (or half an interval, if less): a server older than 12 prints a double with 15 digits,
 * which the driver reads rounded, while an admission moves the TAT on by a whole interval.
 */
function refundSql(table: string): string {
  const now = `COALESCE($1::double precision, extract(epoch FROM clock_timestamp()) * 1000)`
  return `UPDATE ${table} AS r SET tat = GREATEST(r.tat - $3::double precision, ${now}), seq = $6::bigint + 1
    WHERE r.key = $2::text AND abs(r.tat - $5::double precision) < LEAST($3::double precision / 2, 0.01) AND r.seq IN ($6::bigint, $6::bigint + 1)
      AND ${now} < r.tat - $4::double precision * $3::double precision
    RETURNING true AS refunded`
}

const rowSchema = z.object({ admitted: z.boolean(), wait_ms: z.number().min(0), tat: z.number(), seq: z.number().int().min(0) })

/**
 * One rate limit for a fleet of workers (`rateLimit({ store })`), in one table: a row per key with its
 * theoretical arrival time, decided by ONE statement (`INSERT … ON CONFLICT DO UPDATE … RETURNING`), atomic
 * under the row's lock, on the server's clock (`clock_timestamp()`), so admissions are spaced by one clock
 * whichever worker asks. The row also keeps its last decision, which the statement returns, and a refund
 * sequence: `refund` (one `UPDATE`) gives a cancelled waiter's place back while it is still the key's last
 * reservation (see `RateLimitStore.refund`). Each decision
 * gives up after `timeoutMs` with a soft `store_unavailable`; the layer then fails open or closed as its
 * `onStoreFailure` says. A TAT that is not a finite number is read as a key at rest. Rows of keys at rest
 * are harmless and small; delete them at will (`DELETE … WHERE tat < now`).
 *
 * @example
 * const store = postgresRateLimitStore({ pool })
 * await store.migrate()
 * createStack({ tools, middleware: [rateLimit({ limit: 10, store })] })
 */
export function postgresRateLimitStore(options: PostgresRateLimitStoreOptions): PostgresRateLimitStore {
  const o = parseOptions('postgresRateLimitStore()', postgresRateLimitStoreOptionsSchema, options)
  const db = o.pool as NonNullable<typeof o.pool>
  const test = wallNowOf(o)
  const log = o.logger ?? silentLogger
  const bounded = boundedCall(o.clock ?? systemClock, o.timeoutMs, postgresUnavailable, 'PostgreSQL refused or lost the query')
  const table = `"${o.tablePrefix}rate_limits"`
  const sql = acquireSql(table)
  const refundStatement = refundSql(table)
  const refundOf = (key: string, rule: RateRule, reservation: RateReservation): Promise<boolean> =>
    bounded('rateLimit.refund', async () => {
      const nowParam = test === undefined ? null : String(test())
      const params = [nowParam, key, rule.intervalMs, rule.burst, reservation.tat, reservation.seq]
      const { rows } = await statement(db, refundStatement, params)
      return rows.length === 1
    })
  // A reservation that PostgreSQL answers after timeoutMs was never used: it is given back (best effort, logged).
  const late = (key: string, rule: RateRule) => (decision: RateDecision) => {
    if (decision.reservation === undefined) return
    refundOf(key, rule, decision.reservation).then(undefined, (err: unknown) => {
      log.warn({ key, err }, 'rate limit: a late reservation could not be given back; the place stays taken')
    })
  }

  return {
    acquire(key, rule) {
      return bounded(
        'rateLimit.acquire',
        async () => {
          const nowParam = test === undefined ? null : String(test())
          const { rows } = await statement(db, sql, [nowParam, key, rule.intervalMs, rule.burst, rule.maxWaitMs])
          const parsed = rowSchema.safeParse(rows[0])
          if (!parsed.success) {
            log.warn({ key }, 'rate limit: PostgreSQL answered something the store does not understand')
            throw postgresUnavailable('rateLimit.acquire', 'PostgreSQL answered something the store does not understand', parsed.error)
          }
          const { admitted, wait_ms: waitMs, tat, seq } = parsed.data
          if (!admitted || waitMs <= 0) return { admitted, waitMs }
          return { admitted, waitMs, reservation: { tat, seq } }
        },
        late(key, rule),
      )
    },
    refund: refundOf,
    async migrate() {
      await statement(
        db,
        `CREATE TABLE IF NOT EXISTS ${table} (
          key text PRIMARY KEY,
          tat double precision NOT NULL,
          admitted boolean NOT NULL,
          wait_ms double precision NOT NULL,
          seq bigint NOT NULL DEFAULT 0
        )`,
        [],
      )
      // A table made before refunds existed gets the refund sequence; its rows start at 0.
      await statement(db, `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS seq bigint NOT NULL DEFAULT 0`, [])
    },
  }
}
