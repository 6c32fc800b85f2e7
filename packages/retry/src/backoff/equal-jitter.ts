import { parseOptions } from '@shallot/core'
import { type Backoff, type ExponentialOptions, exponentialCeiling, exponentialOptionsSchema, unitDraw } from './backoff.js'

/**
 * Equal jitter: half the exponential ceiling for sure, the other half random, so uniform on
 * `[c/2, c]` with `c = min(capMs, baseMs · 2^(attempt−1))`. Never retries almost at once.
 *
 * @example
 * retry({ backoff: equalJitter({ baseMs: 500, capMs: 8000 }) })
 */
export function equalJitter(options?: ExponentialOptions): Backoff {
  const { baseMs, capMs } = parseOptions('equalJitter()', exponentialOptionsSchema, options)
  return {
    capMs,
    next(attempt, _error, random) {
      const half = exponentialCeiling(baseMs, capMs, attempt) / 2
      return half + unitDraw(random) * half
    },
  }
}
