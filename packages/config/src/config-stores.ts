import type { BreakerStore } from '@shallot/circuit-breaker'
import type { Clock } from '@shallot/core'
import { type IdempotencyStore, memoryIdempotencyStore } from '@shallot/idempotency'
import type { PushbackStore } from '@shallot/rate-limit'
import { memoryRetryBudget, type RetryBudgetStore } from '@shallot/retry'

/**
 * State that outlives any one configuration of a stack: built once per stack (or passed in) and
 * handed to every layer the stack builds, so a reconfigure never forgets idempotency records or
 * drains the retry budget. A breaker store is optional: without one, breaker counts live in the
 * breaker layer, which a reconfigure keeps as long as its own options do not change.
 */
export interface ConfigStores {
  /** Idempotency records. Default: one `memoryIdempotencyStore()` per stack, on the stack's clock. */
  readonly idempotency?: IdempotencyStore
  /** Stack-scoped breaker state shared by every breaker layer. Default: none (each breaker layer keeps its own). */
  readonly breaker?: BreakerStore
  /** The token bucket every retry layer draws from. Default: one `memoryRetryBudget()` per stack; `false` turns it off. */
  readonly retryBudget?: RetryBudgetStore | false
  /**
   * Where every `rate-limit` layer keeps its buckets: a `RateLimitStore` of `@shallot/rate-limit`
   * (`redisRateLimitStore`, `postgresRateLimitStore`) limits a fleet. Default: none (each layer keeps its own, in memory).
   */
  readonly rateLimit?: RateLimitStoreShape
  /**
   * Where every `rate-limit` layer's model side shares a provider's pushback: a `PushbackStore`
   * (`redisStores().pushback`, `postgresStores().pushback`) shares it with a fleet. Default: none (each layer keeps its own, in memory).
   */
  readonly pushback?: PushbackStore
}

/** A `RateLimitStore` of `@shallot/rate-limit`, by its shape (config does not depend on the layer). */
export interface RateLimitStoreShape {
  acquire(
    key: string,
    rule: { readonly intervalMs: number; readonly burst: number; readonly maxWaitMs: number },
    now: number,
  ): { readonly admitted: boolean; readonly waitMs: number } | Promise<{ readonly admitted: boolean; readonly waitMs: number }>
}

declare module '@shallot/core' {
  interface MiddlewareEnv {
    /** Stores built once per stack, so state survives a reconfigure. Built-in layers take theirs from here. */
    readonly stores?: ConfigStores
    /** The folder of the config file (the working directory for a config given as an object). */
    readonly configDir?: string
  }
}

/**
 * The stores of a new stack: the ones given, and in-memory defaults for the rest.
 *
 * @example
 * const stores = createStores({ breaker: redisBreakerStore }, clock)
 */
export function createStores(given: ConfigStores = {}, clock?: Clock): ConfigStores {
  const stores: { -readonly [K in keyof ConfigStores]: ConfigStores[K] } = {
    idempotency: given.idempotency ?? memoryIdempotencyStore(clock === undefined ? {} : { now: () => clock.now() }),
    retryBudget: given.retryBudget ?? memoryRetryBudget(),
  }
  if (given.breaker !== undefined) stores.breaker = given.breaker
  if (given.rateLimit !== undefined) stores.rateLimit = given.rateLimit
  if (given.pushback !== undefined) stores.pushback = given.pushback
  return Object.freeze(stores)
}
