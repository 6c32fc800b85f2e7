import type { Clock, Logger } from '@shallot/core'
import { refineWallNow, wallNowShape } from '@shallot/core/kit'
import type { Pool } from 'pg'
import { z } from 'zod'

const DAY_MS = 24 * 60 * 60 * 1000
const NAME = /^[\x21-\x7e]{1,128}$/
const hasMethods = (value: unknown, methods: readonly string[]) =>
  typeof value === 'object' && value !== null && methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
// A pg.Pool, not a pg.Client: the stores run concurrent transactions, each on a connection of its own.
const isPool = (value: unknown) => hasMethods(value, ['connect', 'query', 'on', 'end']) && 'totalCount' in (value as object)

/**
 * Options of `postgresStores()`: give a `pool` or a `connectionString`, not both.
 *
 * @example
 * postgresStoresOptionsSchema.safeParse({ connectionString: 'postgres://app@db/app', tablePrefix: 'billing_' }).success // true
 */
export const postgresStoresOptionsSchema = z
  .object({
    /** A node-postgres `Pool` (pg 8). The stores borrow connections from it; it stays yours to end. */
    pool: z.custom<Pool>(isPool, 'must be a pg.Pool (new Pool(...) from "pg"), not a Client').optional(),
    /** Instead of `pool`: the stores open their own pool to this database and end it on `close()`. */
    connectionString: z.string().min(1).optional(),
    /** Prepended to every table name (`shallot_idempotency`, …): lowercase letters, digits and "_". Default `'shallot_'`. */
    tablePrefix: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,31}$/, 'must be 1-32 lowercase letters, digits or "_", not starting with a digit')
      .default('shallot_'),
    /** Longest wait per store operation (a whole transaction); past it the operation fails with `store_unavailable`. Default 1000 ms. */
    timeoutMs: z.number().int().positive().max(60_000).default(1000),
    /** Where corrupt rows, late answers and a pool without an error listener are reported. Default: silent. */
    logger: z.custom<Logger>((v) => hasMethods(v, ['debug', 'info', 'warn', 'error', 'child']), 'must be a pino-style logger').optional(),
    /**
     * The clock your stacks run on (`createStack({ clock })`). Breaker states are kept in the
     * server's time and read back into this clock; timeouts wait on it. Default: the system clock.
     */
    clock: z.custom<Clock>((v) => hasMethods(v, ['now', 'sleep']), 'must be a Clock { now(), sleep(ms, signal) }').optional(),
    /**
     * The fleet-wide retry budget: its name (one token bucket per name), capacity, and how long this
     * worker holds successes' refills before writing them in one batch (also written with its next
     * take). Default `{ name: 'default', capacity: 500, refillFlushMs: 1000 }`.
     */
    retryBudget: z
      .object({
        name: z.string().regex(NAME, 'must be 1-128 printable ASCII characters without spaces').default('default'),
        capacity: z.number().min(0).max(1_000_000_000).default(500),
        refillFlushMs: z.number().int().min(0).max(3_600_000).default(1000),
      })
      .strict()
      .prefault({}),
    /** How long an untouched breaker state is kept. Default 24 hours. */
    breakerTtlMs: z.number().int().positive().default(DAY_MS),
    /** How long a checkpoint nobody saved again is kept (removed by `sweep()`). Default 30 days. */
    checkpointTtlMs: z
      .number()
      .int()
      .positive()
      .default(30 * DAY_MS),
    /**
     * How long a worker's claim on a run (`checkpoints.claim`, taken by every run() and resume()) lasts
     * without renewal; the holder renews it every third of this. A crashed worker's runs wait at most
     * this long before another worker may drive them. Default 30000 ms (BullMQ's lock duration).
     */
    claimLeaseMs: z.number().int().min(100).max(DAY_MS).default(30_000),
    /**
     * For tests only: `wallNow` replaces the server's clock (`clock_timestamp()`) with this one (epoch ms; `now` is its deprecated name), so a test can
     * move time without sleeping. Never in production: workers' clocks are not to be compared.
     */
    ...wallNowShape,
  })
  .strict()
  .superRefine(refineWallNow)
  .refine((o) => (o.pool === undefined) !== (o.connectionString === undefined), {
    message: 'give either pool or connectionString (exactly one)',
    path: ['pool'],
  })

/** What `postgresStores()` accepts (see {@link postgresStoresOptionsSchema}). */
export type PostgresStoresOptions = z.input<typeof postgresStoresOptionsSchema>
