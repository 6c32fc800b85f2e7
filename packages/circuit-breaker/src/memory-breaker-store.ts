import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { boundedMap } from './bounded-map.js'
import type { BreakerState } from './breaker-state.js'
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

const optionsSchema = z.strictObject({
  /** Most breakers kept; past it the least recently used is forgotten. Default 1000. */
  maxKeys: z.number().int().min(1).default(1000),
})

/** What {@link memoryBreakerStore} accepts. */
export type MemoryBreakerStoreOptions = z.input<typeof optionsSchema>

const parseStoreOptions = optionsParser('memoryBreakerStore()', optionsSchema)

/**
 * The default store: one Map, bounded to `maxKeys` breakers; past that, the least recently read or
 * written key is forgotten. Every operation is synchronous, so the breaker's happy path never awaits it.
 *
 * @example
 * const store = memoryBreakerStore({ maxKeys: 100 })
 * circuitBreaker({ key: (ctx) => ('call' in ctx ? hostOf(ctx.call.args) : undefined), store })
 */
export function memoryBreakerStore(options?: MemoryBreakerStoreOptions): MemoryBreakerStore {
  return boundedStates(parseStoreOptions(options).maxKeys)
}

/**
 * The store itself, for a `maxKeys` already checked (the breaker's own option): a breaker made per run
 * does not parse the same number twice.
 *
 * @example
 * const local = boundedStates(1000)
 */
export function boundedStates(maxKeys: number): MemoryBreakerStore {
  const states = boundedMap<BreakerState>(maxKeys)
  return {
    get: states.get,
    peek: states.peek,
    set: states.set,
    update(key, change) {
      const current = states.get(key)
      const next = change(current)
      if (next !== current) states.set(key, next)
      return next
    },
    get size() {
      return states.size
    },
  }
}
