/** A remembered good result and when it was stored (`clock.now()`). */
export interface CachedResult {
  readonly value: unknown
  readonly storedAt: number
}

/**
 * The last good result per key, at most `maxEntries` of them: the least recently stored or served
 * is forgotten first, and an entry older than `maxAgeMs` is never served. No timers and no clock:
 * `now` comes in with every call, so it is tested without one.
 *
 * @example
 * const cache = new ResultCache(1000, 3_600_000)
 * cache.store('status_page|{}', { up: true }, clock.now())
 * cache.lookup('status_page|{}', clock.now())?.value // { up: true }
 */
export class ResultCache {
  readonly #entries = new Map<string, CachedResult>()

  constructor(
    readonly maxEntries: number,
    readonly maxAgeMs: number,
  ) {}

  get size(): number {
    return this.#entries.size
  }

  store(key: string, value: unknown, now: number): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, storedAt: now })
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as string)
  }

  /** The entry for `key` if it is young enough; a stale one is dropped. */
  lookup(key: string, now: number): CachedResult | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    if (now - entry.storedAt > this.maxAgeMs) return undefined
    this.#entries.set(key, entry)
    return entry
  }
}
