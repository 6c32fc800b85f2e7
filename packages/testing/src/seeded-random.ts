/**
 * A deterministic random source in [0, 1) (mulberry32), for reproducible jitter and chaos.
 *
 * @example
 * const random = seededRandom(42)
 * createStack({ tools, random })
 */
export function seededRandom(seed: number): () => number {
  if (!Number.isFinite(seed)) throw new TypeError(`seededRandom(): seed must be a finite number, got ${seed}`)
  let state = Math.floor(seed) >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
