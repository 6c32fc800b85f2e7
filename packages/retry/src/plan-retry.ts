import type { ToolEffect, ToolError } from '@shallot/core'
import { type Backoff, MAX_DELAY_MS } from './backoff/backoff.js'
import { canRepeat } from './can-repeat.js'

/**
 * Retries granted past the original call, whatever the policy says (a hard recovery ceiling no policy can raise).
 *
 * @example
 * retry({ maxAttempts: 100 }) // the 6th failure ends the run: LoopError('recovery_exhausted', { attempts: 6 })
 */
export const MAX_RECOVERY_ATTEMPTS = 5

/**
 * The hard ceiling on calls of one logical tool call: the original one plus {@link MAX_RECOVERY_ATTEMPTS}.
 *
 * @example
 * if (loopError.details.attempts === MAX_TOTAL_CALLS) report('the tool kept failing')
 */
export const MAX_TOTAL_CALLS = MAX_RECOVERY_ATTEMPTS + 1

/**
 * Why a failure is not repeated (the `reason` of a `retry.stopped` event). {@link planRetry} decides the first seven;
 * the layer adds `hook_stop`, `retry_budget_empty` and `exhausted_in_run` (an identical call of this run already
 * failed every retry) (soft) and `step_budget` (hard). Soft reasons return the error to the model;
 * `recovery_ceiling` and `step_budget` end the run.
 */
export type RetryStopReason =
  | 'not_retryable'
  | 'unsafe_write'
  | 'max_attempts'
  | 'backoff_stop'
  | 'retry_after_too_long'
  | 'max_elapsed'
  | 'recovery_ceiling'
  | 'retry_budget_empty'
  | 'exhausted_in_run'
  | 'hook_stop'
  | 'step_budget'

/** The facts {@link planRetry} decides on. */
export interface RetryFacts {
  readonly error: ToolError
  readonly effect: ToolEffect | undefined
  /** Calls this retry layer has made so far, the failed one included. */
  readonly calls: number
  /** `ctx.attempt`: calls of this logical call by every layer; the ceiling counts these. */
  readonly totalCalls: number
  /** The policy's limit for this error's code. */
  readonly maxAttempts: number
  readonly elapsedMs: number
  readonly maxElapsedMs: number
  /** The delay slept before the previous repeat. */
  readonly previousMs: number | undefined
  /** The longest `Retry-After` waited for; a longer one stops the call (`retry_after_too_long`). Default: the backoff's cap. */
  readonly maxRetryAfterMs?: number | undefined
  /** Calls past which nothing repeats (`recovery_ceiling`). Default {@link MAX_TOTAL_CALLS}; a model call riding out an outage is bounded by time instead. */
  readonly ceiling?: number | undefined
}

/** Repeat after `delayMs`, or stop for `reason`. */
export type RetryPlan = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly reason: RetryStopReason }

const stops = new Map<RetryStopReason, RetryPlan>()
const stopFor = (reason: RetryStopReason): RetryPlan => {
  let plan = stops.get(reason)
  if (plan === undefined) stops.set(reason, (plan = { retry: false, reason }))
  return plan
}

/**
 * Decides, without I/O or clocks, whether a failed call is repeated and after how long. The checks run from the
 * cheapest soft reason to the hard ceiling, which applies only when everything else would repeat.
 *
 * @example
 * planRetry(fullJitter(), { error, effect: 'read', calls: 1, totalCalls: 1, maxAttempts: 3, elapsedMs: 0,
 *   maxElapsedMs: Infinity, previousMs: undefined }, Math.random) // { retry: true, delayMs: 312.5 }
 */
export function planRetry(backoff: Backoff, facts: RetryFacts, random: () => number): RetryPlan {
  const { error } = facts
  if (!error.retryable) return stopFor('not_retryable')
  if (!canRepeat(error, facts.effect)) return stopFor('unsafe_write')
  if (facts.calls >= facts.maxAttempts) return stopFor('max_attempts')
  const decision: unknown = backoff.next(facts.calls, error, random, facts.previousMs)
  // A custom backoff that answers garbage (undefined, NaN, a string) is read as "stop": the safe side.
  if (typeof decision !== 'number' || Number.isNaN(decision)) return stopFor('backoff_stop')
  let delayMs = Math.min(Math.max(decision, 0), MAX_DELAY_MS)
  const remainingMs = facts.maxElapsedMs - facts.elapsedMs
  const retryAfterMs = error.retryAfterMs
  // One rule for tool and model calls: wait max(the backoff's draw, Retry-After), so a server that asks for longer is obeyed.
  if (retryAfterMs !== undefined && retryAfterMs > 0) {
    const longestMs = facts.maxRetryAfterMs ?? backoff.capMs ?? MAX_DELAY_MS
    if (retryAfterMs > longestMs || retryAfterMs > remainingMs) return stopFor('retry_after_too_long')
    if (retryAfterMs > delayMs) delayMs = retryAfterMs
  }
  if (delayMs > remainingMs) return stopFor('max_elapsed')
  if (facts.totalCalls >= (facts.ceiling ?? MAX_TOTAL_CALLS)) return stopFor('recovery_ceiling')
  return { retry: true, delayMs }
}
