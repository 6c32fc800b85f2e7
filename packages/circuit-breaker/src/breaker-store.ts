import type { BreakerState } from './breaker-state.js'

/**
 * Where a stack-scoped breaker keeps its state, so several workers can share one
 * (`@shallot/store-redis` and `@shallot/store-postgres` ship one each). Every method may be async. When a method throws or rejects, the breaker falls back
 * to its own in-memory state for that call, so a sick store never takes the tools down with it.
 *
 * @example
 * const store: BreakerStore = {
 *   get: (key) => redisGet(key),
 *   update: (key, change) => redisOptimisticUpdate(key, change), // WATCH/MULTI, rerunning change on conflict
 * }
 * circuitBreaker({ store })
 */
export interface BreakerStore {
  /** The state of `key`, or `undefined` when there is none. For inspection; the breaker itself only calls `update`. */
  get(key: string): BreakerState | undefined | Promise<BreakerState | undefined>
  /**
   * Replaces the state of `key` with `change(current)`, atomically, and returns the state written.
   * `change` is pure and cheap, so a shared store may run it again after a write conflict; when it
   * returns `current` itself, nothing needs writing.
   */
  update(key: string, change: (current: BreakerState | undefined) => BreakerState): BreakerState | Promise<BreakerState>
}
