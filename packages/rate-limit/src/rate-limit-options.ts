import { MAX_TIMER_MS } from '@shallot/core/kit'
import { z } from 'zod'
import type { RateRule } from './gcra.js'
import { isPushbackStore, type PushbackStore } from './pushback-store.js'
import { isRateLimitStore, type RateLimitStore } from './rate-limit-store.js'

const DAY_MS = 86_400_000
const count = (what: string) =>
  z
    .number({ error: `must be a whole number of ${what}` })
    .int(`must be a whole number of ${what}`)
    .min(1, `must be at least 1 ${what.replace(/s$/, '')}`)
    .max(1_000_000, `must be at most 1,000,000 ${what}; for more, use a longer perMs`)

/**
 * The options a config file can hold: everything but the functions (`key`) and the store (the host's,
 * `env.stores.rateLimit`).
 */
export const rateLimitDataShape = {
  /** Calls admitted per `perMs` under one key. Required. */
  limit: count('calls'),
  /** The period `limit` is counted over. Default 1,000 ms (so `limit` is calls per second). */
  perMs: z
    .number({ error: 'must be a whole number of milliseconds' })
    .int('must be a whole number of milliseconds')
    .min(1, 'must be at least 1 ms')
    .max(DAY_MS, 'must be at most a day (86,400,000 ms)')
    .default(1_000),
  /** Calls admitted at once after a quiet spell. Default `limit` (a token bucket of `limit` tokens). */
  burst: count('calls').optional(),
  /**
   * The longest a call waits for its turn; a call that would wait longer is refused at once with a soft
   * `rate_limited` and its `retryAfterMs`. Keep it below the agent's `park.afterMs`, so a long wait parks
   * the run instead of holding the worker. 0: never wait. Default 1,000 ms.
   */
  maxWaitMs: z
    .number({ error: 'must be a whole number of milliseconds' })
    .int('must be a whole number of milliseconds')
    .min(0, 'must be 0 (never wait) or more')
    .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (the longest timer)`)
    .default(1_000),
  /** One bucket per tool (per model, for model calls): `'name'`; one for every call the layer sees: `'all'`. Default `'name'`. */
  per: z.enum(['name', 'all']).default('name'),
  /**
   * When the store fails or does not answer within `storeTimeoutMs`: `'open'` lets the call through
   * (logged, and a `rate-limit.store_failed` event), `'closed'` refuses it with the store's soft
   * `store_unavailable`. Default `'open'`: a sick Redis never takes the tools down.
   */
  onStoreFailure: z.enum(['open', 'closed']).default('open'),
  /** Longest wait for the store's answer. Default 1,000 ms. */
  storeTimeoutMs: z
    .number({ error: 'must be a whole number of milliseconds' })
    .int('must be a whole number of milliseconds')
    .min(1, 'must be at least 1 ms')
    .max(60_000, 'must be at most 60,000 ms')
    .default(1_000),
}

export const storeSchema = z
  .custom<RateLimitStore>(isRateLimitStore, {
    message: 'must be a RateLimitStore { acquire(key, rule, now) }, e.g. memoryRateLimitStore()',
  })
  .optional()

export const pushbackSchema = z
  .custom<PushbackStore | false>((v) => v === false || isPushbackStore(v), {
    message: 'must be a PushbackStore { hold(key, ms, now), heldFor(key, now) }, e.g. memoryPushbackStore(), or false for none',
  })
  .optional()

/** The options as data, with `burst` filled in. */
export type RateLimitData = z.output<z.ZodObject<typeof rateLimitDataShape>>

/** The rule a store applies, from parsed options. */
export function ruleOf(options: Pick<RateLimitData, 'limit' | 'perMs' | 'burst' | 'maxWaitMs'>): RateRule {
  return { intervalMs: options.perMs / options.limit, burst: options.burst ?? options.limit, maxWaitMs: options.maxWaitMs }
}

/** The key function option, typed for the context it reads. */
export const keyFunction = <Ctx>() =>
  z
    .custom<(ctx: Ctx) => string | undefined>((v) => typeof v === 'function', {
      message: 'must be a function (ctx) => string | undefined (synchronous)',
    })
    .optional()
