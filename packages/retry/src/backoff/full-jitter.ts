import { optionsParser } from '@shallot/core/kit'
import { type Backoff, type ExponentialOptions, exponentialCeiling, exponentialOptionsSchema, unitDraw } from './backoff.js'

const parseFullJitterOptions = optionsParser('fullJitter()', exponentialOptionsSchema)

/**
 * Full jitter (the default): uniform on `[0, min(capMs, baseMs · 2^(attempt−1)))`. Spreads a herd of
 * clients the widest, which is why AWS recommends it under contention.
 *
 * @example
 * retry({ backoff: fullJitter({ baseMs: 250, capMs: 4000 }) })
 */
export function fullJitter(options?: ExponentialOptions): Backoff {
  const { baseMs, capMs } = parseFullJitterOptions(options)
  return {
    capMs,
    next: (attempt, _error, random) => unitDraw(random) * exponentialCeiling(baseMs, capMs, attempt),
  }
}
