import { optionsParser } from '@shallot/core/kit'
import { type Backoff, type ExponentialOptions, exponentialCeiling, exponentialOptionsSchema, unitDraw } from './backoff.js'

const parseEqualJitterOptions = optionsParser('equalJitter()', exponentialOptionsSchema)

/**
 * Equal jitter: half the exponential ceiling for sure, the other half random, so uniform on
 * `[c/2, c]` with `c = min(capMs, baseMs · 2^(attempt−1))`. Never retries almost at once.
 *
 * @example
 * retry({ backoff: equalJitter({ baseMs: 500, capMs: 8000 }) })
 */
export function equalJitter(options?: ExponentialOptions): Backoff {
  const { baseMs, capMs } = parseEqualJitterOptions(options)
  return {
    capMs,
    next(attempt, _error, random) {
      const ceiling = exponentialCeiling(baseMs, capMs, attempt)
      const half = ceiling / 2
      // min(): with subnormal ceilings the halves do not add back up exactly.
      return Math.min(ceiling, half + unitDraw(random) * (ceiling - half))
    },
  }
}
