/**
 * The latest `size` latencies of one tool and a percentile of them, with no clock and no timers.
 * The percentile is recomputed at most once every `size / 10` new samples, so the happy path
 * sorts a hundred numbers once per ten calls rather than on every call.
 *
 * @example
 * const sample = new LatencySample(100)
 * for (const ms of [10, 12, 11, 250]) sample.add(ms)
 * sample.percentile(0.95) // 250
 */
export class LatencySample {
  readonly #ring: number[] = []
  #next = 0
  #sinceSort = 0
  #cached: number | undefined
  #cachedFor = -1
  readonly #every: number

  constructor(readonly size: number) {
    this.#every = Math.max(1, Math.floor(size / 10))
  }

  get count(): number {
    return this.#ring.length
  }

  add(ms: number): void {
    if (this.#ring.length < this.size) this.#ring.push(ms)
    else this.#ring[this.#next] = ms
    this.#next = (this.#next + 1) % this.size
    this.#sinceSort++
  }

  /** The smallest latency at or above the fraction `p` (0 < p < 1) of the sample; undefined when empty. */
  percentile(p: number): number | undefined {
    if (this.#ring.length === 0) return undefined
    if (this.#cached === undefined || this.#cachedFor !== p || this.#sinceSort >= this.#every) {
      const sorted = [...this.#ring].sort((a, b) => a - b)
      this.#cached = sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]
      this.#cachedFor = p
      this.#sinceSort = 0
    }
    return this.#cached
  }
}
