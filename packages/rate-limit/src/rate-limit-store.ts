import { gcra, type RateDecision, type RateRule } from './gcra.js'

/**
 * Where a rate limit keeps its state, so a fleet of workers shares one limit (`@shallot/store-redis`
 * and `@shallot/store-postgres` ship one each: one Lua script, one SQL statement). `acquire` decides
 * one call atomically: admit it now, reserve it a place up to `rule.maxWaitMs` ahead, or refuse it
 * without taking anything. It may be async; when it throws, rejects or does not answer within the
 * layer's `storeTimeoutMs`, the layer fails open or closed as its `onStoreFailure` option says.
 *
 * @example
 * const store: RateLimitStore = { acquire: (key, rule, now) => myAtomicGcra(key, rule) }
 * rateLimit({ limit: 10, store })
 */
export interface RateLimitStore {
  /**
   * Decides one call under `key`. `now` is the caller's clock (`ctx.clock.now()`): an in-process store
   * runs on it; a shared store ignores it and uses one clock for the fleet (the server's).
   */
  acquire(key: string, rule: RateRule, now: number): RateDecision | Promise<RateDecision>
}

/**
 * True when `value` has the method of a {@link RateLimitStore}.
 *
 * @example
 * isRateLimitStore(memoryRateLimitStore()) // true
 */
export function isRateLimitStore(value: unknown): value is RateLimitStore {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>).acquire === 'function'
}

/** Options of {@link memoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /** Keys kept before the ones at rest are swept; past it with none at rest, the oldest go first. Default 10,000. */
  readonly maxKeys?: number
}

/**
 * The in-process store: one theoretical arrival time per key in a `Map` (any string is a key,
 * `__proto__` included), answered synchronously on the caller's clock. A key at rest (its TAT passed)
 * holds nothing a fresh key would not, so it is dropped when the map passes `maxKeys`; if every key is
 * busy the oldest entries go, which can only admit a call early, never hold one up.
 *
 * @example
 * const store = memoryRateLimitStore()
 * store.acquire('search', { intervalMs: 100, burst: 1, maxWaitMs: 0 }, 0) // { admitted: true, waitMs: 0 }
 */
export function memoryRateLimitStore(options: MemoryRateLimitStoreOptions = {}): RateLimitStore & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 10_000
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new TypeError(`memoryRateLimitStore(): maxKeys must be a positive integer, got ${String(maxKeys)}`)
  }
  const tats = new Map<string, number>()

  function sweep(now: number): void {
    for (const [key, tat] of tats) if (tat <= now) tats.delete(key)
    for (const key of tats.keys()) {
      if (tats.size < maxKeys) break
      tats.delete(key)
    }
  }

  return {
    get size() {
      return tats.size
    },
    acquire(key, rule, now) {
      const step = gcra(tats.get(key), now, rule)
      if (!step.admitted) return { admitted: false, waitMs: step.waitMs }
      if (!tats.has(key) && tats.size >= maxKeys) sweep(now)
      tats.set(key, step.tat)
      return { admitted: true, waitMs: step.waitMs }
    },
  }
}
