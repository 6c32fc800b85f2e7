import { type Backoff, DEFAULT_BASE_MS, DEFAULT_CAP_MS } from './backoff/backoff.js'
import { constant } from './backoff/constant.js'
import { decorrelatedJitter } from './backoff/decorrelated-jitter.js'
import { equalJitter } from './backoff/equal-jitter.js'
import { exponential } from './backoff/exponential.js'
import { fullJitter } from './backoff/full-jitter.js'
import { none } from './backoff/none.js'
import type { BackoffName } from './retry-policy.js'

/**
 * Builds the backoff a policy names, with its `baseMs` and `capMs` (defaults 500 and 8000; `constant` waits `baseMs`).
 *
 * @example
 * backoffFromPolicy({ backoff: 'equal-jitter', baseMs: 200 }).next(1, error, Math.random)
 */
export function backoffFromPolicy(policy: { backoff: BackoffName; baseMs?: number | undefined; capMs?: number | undefined }): Backoff {
  // No delays given: the strategy's own defaults, which it parses once for every retry() without options.
  const options =
    policy.baseMs === undefined && policy.capMs === undefined
      ? undefined
      : { baseMs: policy.baseMs ?? DEFAULT_BASE_MS, capMs: policy.capMs ?? DEFAULT_CAP_MS }
  switch (policy.backoff) {
    case 'full-jitter':
      return fullJitter(options)
    case 'equal-jitter':
      return equalJitter(options)
    case 'decorrelated-jitter':
      return decorrelatedJitter(options)
    case 'exponential':
      return exponential(options)
    case 'constant':
      return constant(policy.baseMs ?? DEFAULT_BASE_MS)
    case 'none':
      return none()
  }
}
