import type { Json } from '@shallot/core'
import type { BreakerState } from './breaker-state.js'

/**
 * How far before "now" a shared `BreakerStore` places the times it reads (the anchor, taken when
 * `update()` is called). The breaker compares a state's times with a `now` it reads when the change
 * runs, after the store's read, so they are never later than it; a time later than that `now` would
 * look like another clock's and reset the half-open slots. The margin is slack on top of that order,
 * not a bound on how long a worker may stall between two reads of its clock (a loaded machine can
 * stall for milliseconds: the breaker's `now` must never be read before the anchor).
 *
 * @example
 * const anchor = clock.now() - READ_MARGIN_MS // taken when update() is called, before the read
 */
export const READ_MARGIN_MS = 1

/** Converts one read's times between a shared store's clock and the worker's clock. */
export interface TimeMap {
  /** A store time as a time of the worker's clock; never later than the anchor. */
  toLocal(storeTime: number): number
  /** The inverse of `toLocal` (exact for every time `toLocal` produced without clamping). */
  toStore(localTime: number): number
}

/**
 * For a `BreakerStore` that keeps times in its own clock (a Redis or PostgreSQL server's, one
 * for the whole fleet): pairs `localAnchor` (the worker's clock just before the read, less
 * {@link READ_MARGIN_MS}) with `storeNow` (the store's clock during the read), so a time `age` ms
 * before the store's now becomes `age` ms before the anchor. Only ages cross between processes,
 * never clock readings.
 *
 * @example
 * const map = timeMap(clock.now() - READ_MARGIN_MS, 1_800_000_000_000)
 * map.toLocal(1_799_999_999_000) // anchor - 1000
 * const toWrite = mapTimes(change(mapTimes(stored, map.toLocal)), map.toStore)
 */
export function timeMap(localAnchor: number, storeNow: number): TimeMap {
  return {
    toLocal: (t) => localAnchor - Math.max(0, storeNow - t),
    toStore: (t) => storeNow - (localAnchor - t),
  }
}

type Bucket = [number, number, number]
const isBucket = (b: Json): b is Bucket => Array.isArray(b) && b.length === 3 && b.every((n) => typeof n === 'number')

// sampling()'s counts hold the start time of each bucket; consecutive()'s hold none.
function mapCounts(counts: Json, f: (t: number) => number): Json {
  if (typeof counts !== 'object' || counts === null || Array.isArray(counts)) return counts
  const buckets = counts.buckets
  if (Object.keys(counts).length !== 1 || !Array.isArray(buckets) || !buckets.every(isBucket)) return counts
  return { buckets: (buckets as Bucket[]).map(([at, ok, bad]): Bucket => [f(at), ok, bad]) }
}

/**
 * The state with every time passed through `f` (see {@link timeMap}): when it opened, when each
 * probe started, and the bucket starts of `sampling()` counts. Counts of another shape are kept as
 * they are.
 *
 * @example
 * const local = mapTimes(stored, timeMap(anchor, serverNow).toLocal)
 */
export function mapTimes(state: BreakerState, f: (t: number) => number): BreakerState {
  return {
    ...state,
    openedAt: f(state.openedAt),
    probes: state.probes.map(([id, at]): [number, number] => [id, f(at)]),
    counts: mapCounts(state.counts, f),
  }
}
