import type { ToolError } from '@shallot/core'
import { z } from 'zod'

/**
 * What a backoff answers: wait this many milliseconds, then repeat; or `'stop'`: do not repeat.
 *
 * @example
 * const decision: BackoffDecision = attempt > 3 ? 'stop' : 1000
 */
export type BackoffDecision = number | 'stop'

/**
 * A retry delay strategy: a small pure object, no timers, no I/O, no hidden state.
 * `attempt` is the retry number (1 before the first repeat); `previousMs` is the delay slept before the
 * previous repeat (`undefined` before the first), for strategies such as decorrelated jitter that build on it.
 * `capMs`, when present, is the longest the strategy ever waits; retry refuses to wait out a
 * `retryAfterMs` longer than that.
 *
 * @example
 * const linear: Backoff = { capMs: 5000, next: (attempt) => (attempt > 4 ? 'stop' : attempt * 1000) }
 * retry({ backoff: linear })
 */
export interface Backoff {
  next(attempt: number, error: ToolError, random: () => number, previousMs?: number): BackoffDecision
  readonly capMs?: number
}

/**
 * Longest single wait: the largest delay a JavaScript timer can hold (about 24.8 days); longer would fire at once.
 *
 * @example
 * constant(MAX_DELAY_MS + 1) // throws OptionsError: constant(): option ms: must be at most 2147483647 ms …
 */
export const MAX_DELAY_MS = 2_147_483_647

/**
 * A delay option: finite, not negative, at most {@link MAX_DELAY_MS}.
 *
 * @example
 * z.object({ ms: delayMsSchema })
 */
export const delayMsSchema = z
  .number()
  .min(0)
  .max(MAX_DELAY_MS, { error: `must be at most ${MAX_DELAY_MS} ms (the longest timer delay)` })

/** Default first ceiling of the exponential family (internal). */
export const DEFAULT_BASE_MS = 500
/** Default largest delay of the exponential family (internal). */
export const DEFAULT_CAP_MS = 8000

/**
 * Adds an issue on `baseMs` when it exceeds `capMs` (either may be missing and take its default).
 *
 * @example
 * z.object({ baseMs: delayMsSchema.optional(), capMs: delayMsSchema.optional() }).superRefine(checkBaseCap)
 */
export function checkBaseCap(options: { baseMs?: number | undefined; capMs?: number | undefined }, ctx: z.RefinementCtx): void {
  const baseMs = options.baseMs ?? DEFAULT_BASE_MS
  const capMs = options.capMs ?? DEFAULT_CAP_MS
  if (baseMs <= capMs) return
  const note = options.baseMs === undefined ? ` (baseMs is ${baseMs} by default)` : ''
  ctx.addIssue({ code: 'custom', path: ['baseMs'], message: `must not exceed capMs (${capMs})${note}` })
}

/**
 * Options of the exponential family: `baseMs` (first ceiling, default 500) and `capMs` (largest ceiling, default 8000).
 *
 * @example
 * exponentialOptionsSchema.parse({ capMs: 4000 }) // { baseMs: 500, capMs: 4000 }
 */
export const exponentialOptionsSchema = z
  .object({ baseMs: delayMsSchema.optional(), capMs: delayMsSchema.optional() })
  .strict()
  .superRefine(checkBaseCap)
  .transform((options) => ({ baseMs: options.baseMs ?? DEFAULT_BASE_MS, capMs: options.capMs ?? DEFAULT_CAP_MS }))

/** What `fullJitter`, `equalJitter`, `decorrelatedJitter` and `exponential` accept. */
export type ExponentialOptions = z.input<typeof exponentialOptionsSchema>

/**
 * `min(capMs, baseMs · 2^(attempt−1))`: the first retry's ceiling is `baseMs`. The exponent is clamped so
 * no attempt number, however large, produces `Infinity · 0` or an unbounded value.
 *
 * @example
 * exponentialCeiling(500, 8000, 3) // 2000
 */
export function exponentialCeiling(baseMs: number, capMs: number, attempt: number): number {
  const exponent = attempt >= 1 ? Math.min(Math.floor(attempt) - 1, 1000) : 0
  return Math.min(capMs, baseMs * 2 ** exponent)
}

/**
 * One draw from `random`, forced into `[0, 1)`: a misbehaving source can never push a delay out of bounds.
 *
 * @example
 * unitDraw(Math.random) // 0.42…
 */
export function unitDraw(random: () => number): number {
  const r = random()
  return r >= 0 && r < 1 ? r : 0
}
