import { optionsParser } from '@shallot/core/kit'
import { type Backoff, type ExponentialOptions, exponentialCeiling, exponentialOptionsSchema } from './backoff.js'

const parseExponentialOptions = optionsParser('exponential()', exponentialOptionsSchema)

/**
 * Exponential backoff without jitter: exactly `min(capMs, baseMs · 2^(attempt−1))`.
 * Predictable, but a herd of clients retries in lockstep; prefer {@link fullJitter} for shared upstreams.
 *
 * @example
 * retry({ backoff: exponential({ baseMs: 100, capMs: 1600 }) }) // 100, 200, 400 … ms
 */
export function exponential(options?: ExponentialOptions): Backoff {
  const { baseMs, capMs } = parseExponentialOptions(options)
  return {
    capMs,
    next: (attempt) => exponentialCeiling(baseMs, capMs, attempt),
  }
}
