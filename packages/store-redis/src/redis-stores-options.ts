import type { Clock, Logger } from '@shallot/core'
import { refineWallNow, wallNowShape } from '@shallot/core/kit'
import { z } from 'zod'
import type { RedisClient } from './redis-commands.js'

const DAY_MS = 24 * 60 * 60 * 1000
const NAME = /^[\x21-\x7e]{1,128}$/
const hasMethods = (value: unknown, methods: readonly string[]) =>
  typeof value === 'object' && value !== null && methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')

/**
 * Options of `redisStores()`. Only `client` is required.
 *
 * @example
 * redisStoresOptionsSchema.safeParse({ client, prefix: 'billing', timeoutMs: 100 }).success // true
 */
export const redisStoresOptionsSchema = z
  .object({
    /**
     * An ioredis 5 client (`new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false })` or a
     * `Cluster`). The stores define their Lua scripts on it; its connection is yours to open and close.
     */
    client: z.custom<RedisClient>(
      (v) => hasMethods(v, ['defineCommand', 'get', 'on']),
      'must be an ioredis client: new Redis(...) or new Cluster(...)',
    ),
    /** First part of every key (`prefix:{scope}:…`). No spaces or braces. Default `'shallot'`. */
    prefix: z
      .string()
      .regex(/^[\x21-\x7a\x7c\x7e]{1,64}$/, 'must be 1-64 printable ASCII characters without spaces or braces')
      .default('shallot'),
    /** Longest wait for Redis per store operation; past it the operation fails with `store_unavailable`. Default 200 ms. */
    timeoutMs: z.number().int().positive().max(60_000).default(200),
    /** Where corrupt values, late answers and client settings that defeat the timeouts are reported. Default: silent. */
    logger: z.custom<Logger>((v) => hasMethods(v, ['debug', 'info', 'warn', 'error', 'child']), 'must be a pino-style logger').optional(),
    /**
     * The clock your stacks run on (`createStack({ clock })`). Breaker states are kept in Redis time and
     * read back into this clock; timeouts wait on it. Default: the system clock, as `createStack`'s.
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
    /** How long an untouched breaker state is kept in Redis. Default 24 hours. */
    breakerTtlMs: z.number().int().positive().default(DAY_MS),
    /**
     * For tests only: `wallNow` replaces Redis's clock (`TIME`) with this one (epoch ms; `now` is its deprecated name), so a test can move time without
     * sleeping. Never in production: the point of the stores is that workers' clocks are not compared.
     */
    ...wallNowShape,
  })
  .strict()
  .superRefine(refineWallNow)

/** What `redisStores()` accepts (see {@link redisStoresOptionsSchema}). */
export type RedisStoresOptions = z.input<typeof redisStoresOptionsSchema>
