import type { BreakerStore } from '@shallot/circuit-breaker'
import { type Logger, parseOptions, silentLogger, systemClock } from '@shallot/core'
import { boundedCall, wallNowOf } from '@shallot/core/kit'
import type { IdempotencyStore } from '@shallot/idempotency'
import type { PushbackStore } from '@shallot/rate-limit'
import { Cluster } from 'ioredis'
import { redisBreakerStore } from './redis-breaker-store.js'
import { type RedisClient, redisCommands } from './redis-commands.js'
import { redisIdempotencyStore } from './redis-idempotency-store.js'
import { redisKeys } from './redis-keys.js'
import { pushbackOn } from './redis-pushback-store.js'
import { type RedisRetryBudget, redisRetryBudget } from './redis-retry-budget.js'
import type { RedisStoreContext } from './redis-store-context.js'
import { type RedisStoresOptions, redisStoresOptionsSchema } from './redis-stores-options.js'
import { redisUnavailable } from './store-unavailable.js'

/**
 * The stores `redisStores()` makes, for `idempotency()`, `circuitBreaker()`, `retry()` and the model side of `rateLimit({ pushback })`.
 *
 * @example
 * const { idempotency: store, breaker, retryBudget } = redisStores({ client })
 */
export interface RedisStores {
  readonly idempotency: IdempotencyStore
  readonly breaker: BreakerStore
  readonly retryBudget: RedisRetryBudget
  /** The model calls' shared pushback, for `rateLimit({ pushback })` (see `redisPushbackStore`). */
  readonly pushback: PushbackStore
}

// A command the stores gave up on must not run later behind their back: no offline queue, at most one retry.
function warnIfQueueing(client: RedisClient, log: Logger): void {
  const { enableOfflineQueue } = client.options
  // A Cluster passes its per-node settings on in redisOptions.
  const node = client instanceof Cluster ? client.options.redisOptions : client.options
  const maxRetriesPerRequest = node?.maxRetriesPerRequest
  if (enableOfflineQueue === false && typeof maxRetriesPerRequest === 'number' && maxRetriesPerRequest <= 1) return
  log.warn(
    { enableOfflineQueue, maxRetriesPerRequest },
    'redisStores(): with the offline queue on or maxRetriesPerRequest above 1, commands given up on may still run after Redis returns; ' +
      'pass { enableOfflineQueue: false, maxRetriesPerRequest: 1 } to the client',
  )
}

/**
 * State for a fleet of workers in one Redis: one idempotency record per key, one breaker per tool,
 * one retry budget. Every step is one Lua script (atomic), time is Redis's, keys are
 * `prefix:{scope}:…` (Cluster hash tags), values read back are validated, and every operation gives
 * up after `timeoutMs` with a soft `store_unavailable`: idempotency then refuses write calls (fails
 * closed), the breaker decides on local state, retry does not retry. Redis comes back, so do they.
 *
 * @example
 * const client = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
 * const stores = redisStores({ client, prefix: 'billing' })
 * const stack = createStack({
 *   tools,
 *   middleware: [idempotency({ store: stores.idempotency }), circuitBreaker({ store: stores.breaker }), retry({ retryBudget: stores.retryBudget })],
 * })
 */
export function redisStores(options: RedisStoresOptions): RedisStores {
  const o = parseOptions('redisStores()', redisStoresOptionsSchema, options)
  const clock = o.clock ?? systemClock
  const log = o.logger ?? silentLogger
  const now = wallNowOf(o)
  warnIfQueueing(o.client, log)
  const context: RedisStoreContext = {
    commands: redisCommands(o.client),
    keys: redisKeys(o.prefix),
    bounded: boundedCall(clock, o.timeoutMs, redisUnavailable, 'Redis refused or lost the command'),
    clock,
    log,
    nowArg: now === undefined ? () => '' : () => String(now()),
  }
  return {
    idempotency: redisIdempotencyStore(context),
    breaker: redisBreakerStore({ ...context, ttlMs: o.breakerTtlMs }),
    retryBudget: redisRetryBudget({ ...context, ...o.retryBudget }),
    pushback: pushbackOn({ client: o.client, prefix: o.prefix, ...context }),
  }
}
