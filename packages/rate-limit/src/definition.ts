import { defineMiddleware, type MiddlewareEnv } from '@shallot/core'
import { z } from 'zod'
import { isPushbackStore, type PushbackStore } from './pushback-store.js'
import { rateLimit } from './rate-limit.js'
import { rateLimitDataShape } from './rate-limit-options.js'
import { isRateLimitStore, type RateLimitStore } from './rate-limit-store.js'

/**
 * The rate limit as a config file writes it: every option but `key` (a function cannot be written in
 * a file) and `store` (the host's, `env.stores.rateLimit`).
 *
 * @example
 * rateLimitFileOptionsSchema.parse({ limit: 60, perMs: 60_000, maxWaitMs: 2_000 })
 */
export const rateLimitFileOptionsSchema = z.strictObject(rateLimitDataShape)

/** The host's shared stores, when it gave ones that are stores: the buckets, and the model side's pushback. */
function storeOf(env: MiddlewareEnv): { store?: RateLimitStore; pushback?: PushbackStore } {
  const { rateLimit: store, pushback } = (env.stores ?? {}) as { rateLimit?: unknown; pushback?: unknown }
  return { ...(isRateLimitStore(store) ? { store } : {}), ...(isPushbackStore(pushback) ? { pushback } : {}) }
}

/**
 * `rateLimit` as a middleware definition, for config files and registries: one layer, whose tool side
 * serves `stack:` and whose model side serves `modelMiddleware:`. A host that limits a fleet passes a shared
 * store as `env.stores.rateLimit` (`redisRateLimitStore`, `postgresRateLimitStore`), and one for the model
 * side's pushback as `env.stores.pushback` (`redisStores().pushback`, `postgresStores().pushback`).
 *
 * @example
 * const layer = rateLimitDefinition.build({ limit: 10, perMs: 1_000 })
 * const modelLayer = rateLimitDefinition.buildModel({ limit: 50, perMs: 60_000 })
 */
export const rateLimitDefinition = defineMiddleware({
  name: 'rate-limit',
  description:
    'A GCRA rate limit per tool (or model, or per key): waits up to maxWaitMs for a turn, else refuses softly with rate_limited and retryAfterMs.',
  options: rateLimitFileOptionsSchema,
  handles: { tools: true, models: true },
  create: (options, env) => rateLimit({ ...options, ...storeOf(env) }),
})
