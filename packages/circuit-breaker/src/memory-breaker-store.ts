import type { BreakerState } from './breaker-machine.js'
import type { BreakerStore } from './breaker-store.js'

/** A {@link BreakerStore} in this process's memory: synchronous, bounded, least recently used key evicted first. */
export interface MemoryBreakerStore extends BreakerStore {
  get(key: string): BreakerState | undefined
  update(key: string, change: (current: BreakerState | undefined) => BreakerState): BreakerState
  /** Reads without counting as a use. */
  peek(key: string): BreakerState | undefined
  set(key: string, state: BreakerState): void
  readonly size: number
}

/**
 * The default store: one Map, bounded to `maxKeys` breakers; reading or writing a key makes it the
 * most recently used. Every operation is synchronous, so the breaker's happy path never awaits it.
 *
 * @example
 * const store = memoryBreakerStore({ maxKeys: 100 })
 * circuitBreaker({ key: (ctx) => hostOf(ctx.call.args), store })
 */
export function memoryBreakerStore({ maxKeys = 1000 }: { maxKeys?: number } = {}): MemoryBreakerStore {
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new TypeError(`memoryBreakerStore(): maxKeys must be a positive integer, got ${String(maxKeys)}`)
  }
  const states = new Map<string, BreakerState>()

  const set = (key: string, state: BreakerState): void => {
    states.delete(key)
    states.set(key, state)
    if (states.size > maxKeys) states.delete(states.keys().next().value as string)
  }
  const get = (key: string): BreakerState | undefined => {
    const state = states.get(key)
    if (state !== undefined) {
      states.delete(key)
      states.set(key, state)
    }
    return state
  }

  return {
    get,
    peek: (key) => states.get(key),
    set,
    update(key, change) {
      const current = get(key)
      const next = change(current)
      if (next !== current) set(key, next)
      return next
    },
    get size() {
      return states.size
    },
  }
}
