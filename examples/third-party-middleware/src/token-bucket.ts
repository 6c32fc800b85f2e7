/** A token bucket at one moment: `tokens` left (fractional while refilling) as of `at` (clock ms). */
export interface Bucket {
  readonly tokens: number
  readonly at: number
}

/** What {@link takeToken} decided. */
export interface Take {
  readonly bucket: Bucket
  readonly allowed: boolean
  /** When refused: milliseconds until one whole token is back. 0 when allowed. */
  readonly retryAfterMs: number
}

/**
 * Refills `bucket` for the time since it was last touched (`rps` tokens a second, never above
 * `burst`), then takes one token if there is one. Pure: no clock, no timers; a new bucket starts full.
 *
 * @example
 * takeToken(undefined, 0, 5, 2) // { allowed: true, bucket: { tokens: 1, at: 0 }, retryAfterMs: 0 }
 */
export function takeToken(bucket: Bucket | undefined, now: number, rps: number, burst: number): Take {
  const elapsed = bucket === undefined ? 0 : Math.max(0, now - bucket.at)
  const tokens = bucket === undefined ? burst : Math.min(burst, bucket.tokens + (elapsed * rps) / 1000)
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, allowed: true, retryAfterMs: 0 }
  return { bucket: { tokens, at: now }, allowed: false, retryAfterMs: Math.ceil(((1 - tokens) * 1000) / rps) }
}
