/** A map that keeps at most `maxKeys` entries, forgetting the least recently used one first. */
export interface BoundedMap<V> {
  /** The value of `key`, counted as a use. */
  get(key: string): V | undefined
  /** Reads without counting as a use. */
  peek(key: string): V | undefined
  set(key: string, value: V): void
  readonly size: number
}

/**
 * Keeps at most `maxKeys` values; past that, the least recently read or written key is forgotten.
 *
 * @example
 * const views = boundedMap<number>(1000)
 * views.set('search', 1)
 */
export function boundedMap<V>(maxKeys: number): BoundedMap<V> {
  // A use stamps the entry instead of moving it in the Map: reads stay a lookup and a field write,
  // and only an insert past maxKeys pays for finding the stalest entry.
  const entries = new Map<string, { value: V; used: number }>()
  let tick = 0

  const evictStalest = (keep: string): void => {
    let stalest: string | undefined
    let oldest = Number.POSITIVE_INFINITY
    for (const [key, entry] of entries) {
      if (entry.used < oldest && key !== keep) {
        oldest = entry.used
        stalest = key
      }
    }
    if (stalest !== undefined) entries.delete(stalest)
  }

  return {
    get(key) {
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      entry.used = ++tick
      return entry.value
    },
    peek: (key) => entries.get(key)?.value,
    set(key, value) {
      const entry = entries.get(key)
      if (entry !== undefined) {
        entry.value = value
        entry.used = ++tick
        return
      }
      entries.set(key, { value, used: ++tick })
      if (entries.size > maxKeys) evictStalest(key)
    },
    get size() {
      return entries.size
    },
  }
}
