/**
 * The longest a pushback holds a key: an hour. A longer `Retry-After` is held this long (the next
 * call after it learns the rest), and a hold a store reads back that ends further ahead is not one the
 * layer wrote: it is garbage (the store failed), never a wait.
 *
 * @example
 * MAX_PUSHBACK_MS // 3_600_000
 */
export const MAX_PUSHBACK_MS = 3_600_000

/**
 * Where a fleet shares what a provider said about itself: "come back in 30 s" (a `Retry-After`). A worker
 * whose model call fails with one holds the call's key (`model:<provider>:<name>` by default) for that
 * long; every worker reads the key before it sends and holds its call back until the hold ends. Both
 * methods may be async; the layer bounds them by its `storeTimeoutMs` and its signal, and a store that
 * throws, rejects, is late or answers garbage (not a finite number of 0 ms or more, or past
 * {@link MAX_PUSHBACK_MS}) has failed: the layer goes on as its `onStoreFailure` says. `@shallot/store-redis`,
 * `@shallot/store-postgres` and `@shallot/store-sqlite` ship one each.
 *
 * @example
 * const store: PushbackStore = { hold: (key, ms) => myTable.extend(key, ms), heldFor: (key) => myTable.msLeft(key) }
 * rateLimit({ limit: 500, perMs: 60_000, pushback: store })
 */
export interface PushbackStore {
  /**
   * Holds `key` for `ms` from now, atomically: a longer hold already in place stays, a shorter one is
   * extended. A hold in place that is not a time, or ends more than {@link MAX_PUSHBACK_MS} from now, is
   * replaced. `now` is the caller's clock (`ctx.clock.now()`): an in-process store runs on it; a shared
   * store ignores it and uses one clock for the fleet (its server's).
   */
  hold(key: string, ms: number, now: number): void | Promise<void>
  /** How much longer `key` is held, in ms from now: 0 when it is not held. `now` as for {@link PushbackStore.hold}. */
  heldFor(key: string, now: number): number | Promise<number>
}

/**
 * True when `value` has the methods of a {@link PushbackStore}.
 *
 * @example
 * isPushbackStore(memoryPushbackStore()) // true
 */
export function isPushbackStore(value: unknown): value is PushbackStore {
  const store = value as Record<string, unknown> | null
  return typeof store === 'object' && store !== null && typeof store.hold === 'function' && typeof store.heldFor === 'function'
}

/** Options of {@link memoryPushbackStore}. */
export interface MemoryPushbackStoreOptions {
  /** Keys kept before the ones whose hold ended are swept; past it with none ended, the oldest go first. Default 10,000. */
  readonly maxKeys?: number
}

/**
 * The in-process store: when each key's hold ends, in a `Map` (any string is a key, `__proto__`
 * included), on the caller's clock, answered synchronously. Runs in one process share it; a fleet
 * shares a Redis, PostgreSQL or SQLite one. A key whose hold ended is dropped when the map passes
 * `maxKeys`; if every key is held, the oldest go, which can only let a call go early, never hold one up.
 *
 * @example
 * const store = memoryPushbackStore()
 * store.hold('model:openai:gpt-4o', 30_000, 0)
 * store.heldFor('model:openai:gpt-4o', 10_000) // 20000
 */
export function memoryPushbackStore(options: MemoryPushbackStoreOptions = {}): PushbackStore & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 10_000
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new TypeError(`memoryPushbackStore(): maxKeys must be a positive integer, got ${String(maxKeys)}`)
  }
  const ends = new Map<string, number>()

  function sweep(now: number): void {
    for (const [key, end] of ends) if (end <= now) ends.delete(key)
    for (const key of ends.keys()) {
      if (ends.size < maxKeys) break
      ends.delete(key)
    }
  }

  return {
    get size() {
      return ends.size
    },
    hold(key, ms, now) {
      const end = now + ms
      const held = ends.get(key)
      if (held !== undefined && held >= end && held - now <= MAX_PUSHBACK_MS) return
      if (held === undefined && ends.size >= maxKeys) sweep(now)
      ends.set(key, end)
    },
    heldFor(key, now) {
      const end = ends.get(key)
      return end === undefined || end <= now ? 0 : end - now
    },
  }
}
