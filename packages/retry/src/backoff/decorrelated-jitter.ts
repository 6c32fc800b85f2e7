import { optionsParser } from '@shallot/core/kit'
import { type Backoff, type ExponentialOptions, exponentialOptionsSchema, unitDraw } from './backoff.js'

const parseDecorrelatedJitterOptions = optionsParser('decorrelatedJitter()', exponentialOptionsSchema)

/**
 * Decorrelated jitter (AWS): `min(capMs, random between baseMs and 3 × the previous delay)`, starting from `baseMs`.
 * Stays pure and shareable across concurrent calls: the retry layer passes the previous delay in as `previousMs`
 * instead of the object remembering it.
 *
 * @example
 * retry({ backoff: decorrelatedJitter({ baseMs: 500, capMs: 8000 }) })
 */
export function decorrelatedJitter(options?: ExponentialOptions): Backoff {
  const { baseMs, capMs } = parseDecorrelatedJitterOptions(options)
  return {
    capMs,
    next(_attempt, _error, random, previousMs) {
      const previous = previousMs !== undefined && previousMs >= baseMs ? Math.min(previousMs, capMs) : baseMs
      const high = previous * 3
      return Math.min(capMs, baseMs + unitDraw(random) * (high - baseMs))
    },
  }
}
