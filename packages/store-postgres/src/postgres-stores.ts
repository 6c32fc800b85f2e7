import type { BreakerStore } from '@shallot/circuit-breaker'
import { parseOptions, silentLogger, systemClock, ToolError } from '@shallot/core'
import { boundedCall, wallNowOf } from '@shallot/core/kit'
import type { IdempotencyStore } from '@shallot/idempotency'
import type { PushbackStore } from '@shallot/rate-limit'
import pg from 'pg'
import { postgresBreakerStore } from './postgres-breaker-store.js'
import { type PostgresCheckpoints, postgresCheckpoints } from './postgres-checkpoints.js'
import { postgresIdempotencyStore } from './postgres-idempotency-store.js'
import { pushbackOn, pushbackTableDdl } from './postgres-pushback-store.js'
import { type PostgresRetryBudget, postgresRetryBudget } from './postgres-retry-budget.js'
import { type PostgresStoreContext, statement, transaction } from './postgres-store-context.js'
import { type PostgresStoresOptions, postgresStoresOptionsSchema } from './postgres-stores-options.js'
import { postgresUnavailable } from './store-unavailable.js'
import { NOW, SCHEMA_VERSION, schemaStatements, tables } from './tables.js'

/** What one `sweep()` deleted. */
export interface SweepCounts {
  readonly idempotency: number
  readonly breakers: number
  readonly checkpoints: number
  /** Claims on runs whose lease ran out unrenewed (holders that died, or runs nobody resumed). */
  readonly claims: number
}

/**
 * The stores `postgresStores()` makes, for `idempotency()`, `circuitBreaker()`, `retry()`, `createAgent()` and
 * the model side of `rateLimit({ pushback })`, and the table housekeeping.
 *
 * @example
 * const { idempotency: store, breaker, retryBudget, checkpoints } = postgresStores({ pool })
 */
export interface PostgresStores {
  readonly idempotency: IdempotencyStore
  readonly breaker: BreakerStore
  readonly retryBudget: PostgresRetryBudget
  readonly checkpoints: PostgresCheckpoints
  /** The model calls' shared pushback, for `rateLimit({ pushback })` (see `postgresPushbackStore`); `migrate()` makes its table. */
  readonly pushback: PushbackStore
  /** The pool in use (yours, or the one opened from `connectionString`). */
  readonly pool: pg.Pool
  /** The prefix of every table name. */
  readonly tablePrefix: string
  /** Creates the tables when missing (safe to run from every worker at once). Rejects on a schema newer than this package. */
  migrate(): Promise<void>
  /** Deletes expired idempotency records and breaker states, checkpoints older than `checkpointTtlMs`, and lapsed claims on runs. */
  sweep(): Promise<SweepCounts>
  /** Ends the pool if the stores opened it (from `connectionString`); a pool passed in stays open. */
  close(): Promise<void>
}

function schemaError(found: number): ToolError {
  return new ToolError(
    'store_schema_newer',
    `The PostgreSQL tables are at schema version ${found}, newer than this @shallot/store-postgres (version ${SCHEMA_VERSION}).`,
    { category: 'fatal', retryable: false, hint: 'upgrade @shallot/store-postgres on this worker, or use another tablePrefix' },
  )
}

/**
 * Durable state for one worker or a fleet, in PostgreSQL: idempotency records with fencing tokens,
 * one breaker per tool, one retry budget, and agent checkpoints. `begin` is one transaction,
 * time is the server's, every row read back is validated (a corrupt idempotency record or
 * checkpoint is refused as `outcome_unknown`, never replayed and never run again), and every
 * operation gives up after `timeoutMs` with a soft `store_unavailable`. Call `migrate()` once first.
 *
 * @example
 * const pool = new Pool({ connectionString: process.env.DATABASE_URL })
 * pool.on('error', (err) => log.warn({ err }, 'postgres'))
 * const stores = postgresStores({ pool, tablePrefix: 'billing_' })
 * await stores.migrate()
 * const stack = createStack({ tools, middleware: [idempotency({ store: stores.idempotency }), retry({ retryBudget: stores.retryBudget })] })
 */
export function postgresStores(options: PostgresStoresOptions): PostgresStores {
  const o = parseOptions('postgresStores()', postgresStoresOptionsSchema, options)
  const clock = o.clock ?? systemClock
  const log = o.logger ?? silentLogger
  const owned = o.pool === undefined
  const pool =
    o.pool ?? new pg.Pool({ connectionString: o.connectionString, connectionTimeoutMillis: o.timeoutMs, idleTimeoutMillis: 10_000 })
  if (owned)
    pool.on('error', (err) => log.warn({ err }, 'postgresStores(): an idle connection failed; the pool opens a new one when needed'))
  else if (pool.listenerCount('error') === 0) {
    log.warn({}, 'postgresStores(): the pool has no "error" listener, so a server restart crashes the process; add pool.on("error", …)')
  }
  const now = wallNowOf(o)
  const names = tables(o.tablePrefix)
  const context: PostgresStoreContext = {
    pool,
    tables: names,
    bounded: boundedCall(clock, o.timeoutMs, postgresUnavailable, 'PostgreSQL refused or lost the query'),
    clock,
    log,
    nowParam: now === undefined ? () => null : () => String(Math.floor(now())),
  }

  const pushbackTable = `"${names.prefix}pushback"`

  async function migrate(): Promise<void> {
    try {
      await transaction(pool, new AbortController().signal, async (query) => {
        // One migrating worker at a time: concurrent CREATE ... IF NOT EXISTS can still collide.
        await query('SELECT pg_advisory_xact_lock(hashtext($1))', [`shallot-store-postgres:${names.prefix}`])
        await query(`CREATE TABLE IF NOT EXISTS ${names.schema} (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)`, [])
        const found = Number((await query(`SELECT version FROM ${names.schema} WHERE id = 1`, [])).rows[0]?.version ?? 0)
        if (found > SCHEMA_VERSION) throw schemaError(found)
        for (const ddl of [...schemaStatements(names), pushbackTableDdl(pushbackTable)]) await query(ddl, [])
        await query(`INSERT INTO ${names.schema} (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = $1`, [
          SCHEMA_VERSION,
        ])
      })
    } catch (err) {
      throw ToolError.is(err) ? err : postgresUnavailable('migrate', 'PostgreSQL refused or lost the query', err)
    }
  }

  async function sweep(): Promise<SweepCounts> {
    const at = [context.nowParam()]
    const deleted = async (sql: string, values: readonly unknown[]) => (await statement(pool, sql, values)).rowCount ?? 0
    try {
      return {
        idempotency: await deleted(`DELETE FROM ${names.idempotency} WHERE expires_at <= ${NOW}`, at),
        breakers: await deleted(`DELETE FROM ${names.breakers} WHERE expires_at <= ${NOW}`, at),
        checkpoints: await deleted(`DELETE FROM ${names.checkpoints} WHERE updated_at <= ${NOW} - $2`, [...at, o.checkpointTtlMs]),
        // Exactly the claims a take would replace, each locked and re-checked first: a live one never matches. A row a
        // take or another sweep has locked is skipped (it is being made live, or deleted), so sweeps never wait or deadlock.
        claims: await deleted(
          `DELETE FROM ${names.claims} WHERE run_id IN (SELECT run_id FROM ${names.claims} WHERE lease_until <= ${NOW} FOR UPDATE SKIP LOCKED)`,
          at,
        ),
      }
    } catch (err) {
      throw postgresUnavailable('sweep', 'PostgreSQL refused or lost the query', err)
    }
  }

  return {
    idempotency: postgresIdempotencyStore(context),
    breaker: postgresBreakerStore({ ...context, ttlMs: o.breakerTtlMs }),
    retryBudget: postgresRetryBudget({ ...context, ...o.retryBudget }),
    checkpoints: postgresCheckpoints(context, o.claimLeaseMs),
    pushback: pushbackOn({ ...context, table: pushbackTable }),
    pool,
    tablePrefix: names.prefix,
    migrate,
    sweep,
    async close() {
      if (owned) await pool.end()
    },
  }
}
