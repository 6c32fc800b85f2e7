import { ToolError } from '@shallot/core'

/** What a refusal says: who was limited, under which key, by which limit, and when a call would be admitted. */
export interface RateLimitFacts {
  /** `tool 'search'` or `model 'gpt-4o'`. */
  readonly subject: string
  readonly key: string
  readonly limit: number
  readonly perMs: number
  /** How long from now a call would be admitted without waiting. */
  readonly retryAfterMs: number
  /** The longest this call was allowed to wait. */
  readonly maxWaitMs: number
}

const span = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms} ms`)
const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`

/**
 * The soft refusal of a call over its rate limit. `transient` (the limit frees up by itself) with
 * `retryAfterMs`, which the model reads and an agent with `park` parks on when it is at least
 * `park.afterMs`; `safeToRepeat: true`, because the call never ran; `retryable: false`, because the
 * layer already waited what it may: a retry layer must not spin on it, and a breaker must not count it.
 *
 * @example
 * rateLimitedError({ subject: "tool 'search'", key: 'tool:search', limit: 10, perMs: 1000, retryAfterMs: 2400, maxWaitMs: 1000 }).message
 * // "tool 'search' is rate limited to 10 calls per 1s; the next call is admitted in 2.4s"
 */
export function rateLimitedError(facts: RateLimitFacts): ToolError {
  const { subject, key, limit, perMs, maxWaitMs } = facts
  const retryAfterMs = Math.max(1, Math.ceil(facts.retryAfterMs))
  const calls = limit === 1 ? 'call' : 'calls'
  return new ToolError(
    'rate_limited',
    `${subject} is rate limited to ${limit} ${calls} per ${span(perMs)}; the next call is admitted in ${seconds(retryAfterMs)}`,
    {
      category: 'transient',
      retryable: false,
      safeToRepeat: true,
      retryAfterMs,
      hint: 'the call did not run; call it again after retryAfterMs, or do other work first',
      details: { key, limit, perMs, maxWaitMs },
    },
  )
}
