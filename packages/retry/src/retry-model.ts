import { abortReason, LoopError, type ModelContext, type ModelMiddleware, type ModelNext, ToolError } from '@shallot/core'
import { createSanitizer, describeModelFailure, isTransientModelError, modelFailureCode } from '@shallot/core/kit'
import type { Backoff } from './backoff/backoff.js'
import { planRetry } from './plan-retry.js'
import type { RetryBudgetStore } from './retry-budget-store.js'
import type { RetryPolicy } from './retry-policy.js'
import { refillTokens, takeTokens } from './retry-tokens.js'

/**
 * The longest `Retry-After` a model call waits for unless the options' `maxRetryAfterMs` says
 * otherwise. A model call that gives up ends the run, where a tool call's error goes back to the
 * model, so a model waits longer than the backoff's cap.
 *
 * @example
 * retry().wrapModelCall // waits out a Retry-After of up to DEFAULT_MODEL_MAX_RETRY_AFTER_MS
 */
export const DEFAULT_MODEL_MAX_RETRY_AFTER_MS = 60_000

/** What the model side reads of `retry()`'s parsed options. */
export type ModelRetryPolicy = Pick<
  RetryPolicy,
  'maxAttempts' | 'perCode' | 'maxElapsedMs' | 'maxRetryAfterMs' | 'retryBudgetCosts' | 'outageBudgetMs'
>

/**
 * The most requests one model call makes while it rides out an outage, whatever the budget: a backstop against a
 * policy that waits nothing between failures that come back at once (the budget, the run's steps and the retry
 * budget bound it first in any sane setting).
 */
const MAX_OUTAGE_CALLS = 1000

/** A model failure in the planner's words: a ToolError as it is, else retryable exactly when core calls it transient. */
function asToolError(err: unknown): ToolError {
  if (ToolError.is(err)) return err
  const message = err instanceof Error ? err.message : String(err)
  return isTransientModelError(err)
    ? new ToolError('upstream_error', message, { category: 'transient', retryable: true, cause: err })
    : new ToolError('upstream_error', message, { category: 'fatal', retryable: false, cause: err })
}

// A provider's message can quote a key or an address back: the log line gets it without them, cut at 500.
const lineText = createSanitizer()

/** How a model call's repeats are bounded, for the `model.retry` event: attempts, or an outage budget. */
type Bound = { readonly maxAttempts: number } | { readonly outageBudgetMs: number; readonly elapsedMs: number }

/**
 * The log line and the `model.retry` event of a repeat, in the words of core's own model retry, with
 * what core's event lacks: the bound (`maxAttempts` for this failure's code, or `outageBudgetMs` and the
 * `elapsedMs` of it spent), and the failure's `retryAfterMs` and HTTP `status` when it carried them.
 */
function tellRetry(ctx: ModelContext, err: unknown, error: ToolError, delayMs: number, bound: Bound): void {
  const cause = describeModelFailure(err)
  const { attempt } = ctx
  ctx.log.warn(
    { model: ctx.model.name, attempt, delayMs, code: modelFailureCode(err), error: lineText.text(cause, 500) },
    'model call failed; retrying',
  )
  const event = {
    type: 'model.retry' as const,
    at: ctx.clock.now(),
    runId: ctx.run.id,
    turn: ctx.turn,
    model: ctx.model.name,
    attempt,
    ...bound,
    delayMs,
    error: cause,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    ...statusOf(error),
  }
  ctx.emit(event)
}

/** `{ status }` when the failure names an HTTP status: a classifier's `details.status`, or the provider error's own. */
function statusOf(error: ToolError): { status?: number } {
  const cause = error.cause as { statusCode?: unknown; status?: unknown } | null | undefined
  const candidates = [error.details?.status, cause?.statusCode, cause?.status]
  const status = candidates.find((s): s is number => typeof s === 'number' && Number.isInteger(s) && s >= 100 && s <= 599)
  return status === undefined ? {} : { status }
}

/** How one model call's repeats are bounded: by attempts, or riding out an outage by time. */
interface Limits {
  readonly maxElapsedMs: number
  /** The outage budget being ridden out, or undefined when attempts bound the call. */
  readonly outageMs: number | undefined
  readonly ceiling: number | undefined
}

/** The two ways a call may be bounded, built once per layer: by attempts, and riding out an outage (when budgeted). */
function limitsOf(policy: ModelRetryPolicy): { byAttempts: Limits; riding: Limits | undefined } {
  const maxElapsedMs = policy.maxElapsedMs ?? Number.POSITIVE_INFINITY
  const byAttempts: Limits = { maxElapsedMs, outageMs: undefined, ceiling: undefined }
  // An outage budget of 0 rides out nothing: attempts alone bound the call, as without one.
  const outageMs = policy.outageBudgetMs === 0 ? undefined : policy.outageBudgetMs
  const riding =
    outageMs === undefined ? undefined : { maxElapsedMs: Math.min(maxElapsedMs, outageMs), outageMs, ceiling: MAX_OUTAGE_CALLS }
  return { byAttempts, riding }
}

/**
 * `retry()`'s model side: repeats a failed model attempt when the failure is transient (a retryable
 * ToolError, 408/429/5xx, a dropped connection, a timeout: core's `isTransientModelError`), with the
 * backoff and the provider's `Retry-After` as a floor: it waits max(backoff, Retry-After), the same
 * rule as tool calls. A `Retry-After` past `maxRetryAfterMs` (default 60 s here) gives the call up at
 * once. With an `outageBudgetMs` it rides an outage out: time bounds the repeats instead of
 * `maxAttempts` (`perCode` still bounds its codes), unless a spare model waits outside (a
 * `fallback({ models })` sets `ctx.spareModel`): asking the spare beats waiting. Each repeat is one
 * more attempt of the terminal, which spends a step of the run; a `LoopError` (budget, cancel, a
 * fallback's verdict) passes through as it is, and every wait stops the moment the run is
 * cancelled. What it gives up on leaves as it came, for the agent to end the run with (`model_failed`).
 *
 * `perCode` applies to a ToolError's code (`rate_limited`, `timeout`, …); unlike tool calls, a model
 * timeout gets `maxAttempts` like any other transient failure unless `perCode.timeout` says otherwise.
 */
export function modelRetryOf(policy: ModelRetryPolicy, backoff: Backoff, store: RetryBudgetStore | undefined): ModelMiddleware {
  const { byAttempts, riding } = limitsOf(policy)
  const maxRetryAfterMs = policy.maxRetryAfterMs ?? DEFAULT_MODEL_MAX_RETRY_AFTER_MS
  const attemptsByCode = new Map(Object.entries(policy.perCode).map(([code, { maxAttempts }]) => [code, maxAttempts]))
  const costs = policy.retryBudgetCosts
  // Riding out an outage, time bounds the call: maxAttempts no longer does (perCode still does, for its codes).
  const attemptsFor = (code: string, limits: Limits) =>
    attemptsByCode.get(code) ?? (limits.outageMs === undefined ? policy.maxAttempts : Number.POSITIVE_INFINITY)
  const boundOf = (code: string, limits: Limits, elapsedMs: number): Bound =>
    limits.outageMs === undefined || attemptsByCode.has(code)
      ? { maxAttempts: attemptsFor(code, limits) }
      : { outageBudgetMs: limits.outageMs, elapsedMs }

  /** Whether the bucket allows this repeat; a store that fails is read as no (the safe side), and logged. */
  function allowed(ctx: ModelContext, error: ToolError): Promise<boolean> | boolean {
    if (store === undefined) return true
    const cost = error.code === 'timeout' ? costs.timeout : costs.retry
    return takeTokens(store, cost, ctx.log, 'retry budget store failed; not retrying the model call')
  }

  return async function retry(ctx: ModelContext, next: ModelNext): Promise<void> {
    // Inner layers may swap ctx.signal for a deadline; waits and repeats follow the signal this call came with.
    const came = ctx.signal
    // A spare model waits outside (a fallback layer says so by the context's shape): asking it beats riding this out.
    const limits = riding !== undefined && (ctx as { spareModel?: unknown }).spareModel !== true ? riding : byAttempts
    const { maxElapsedMs } = limits
    // Without a maxElapsedMs nothing reads the start: an answered call costs no clock reading.
    const started = maxElapsedMs === Number.POSITIVE_INFINITY ? 0 : ctx.clock.now()
    let previousMs: number | undefined
    for (let calls = 1; ; calls++) {
      let failure: unknown
      try {
        await next()
        if (store !== undefined && costs.success > 0) void refillTokens(store, costs.success, ctx.log)
        return
      } catch (err) {
        failure = err
      }
      ctx.signal = came
      const signal = came
      if (LoopError.is(failure)) throw failure
      if (signal.aborted) throw abortReason(signal)
      const error = asToolError(failure)
      const elapsedMs = maxElapsedMs === Number.POSITIVE_INFINITY ? 0 : ctx.clock.now() - started
      const maxAttempts = attemptsFor(error.code, limits)
      const facts = { error, effect: 'read' as const, calls, totalCalls: calls, maxAttempts, elapsedMs, previousMs }
      const plan = planRetry(backoff, { ...facts, maxElapsedMs, maxRetryAfterMs, ceiling: limits.ceiling }, ctx.random)
      if (!plan.retry || !(await allowed(ctx, error))) throw failure
      // No step left: the terminal's own budget error ends the run, without waiting a backoff for it.
      const delayMs = ctx.run.budget.remaining > 0 ? plan.delayMs : 0
      tellRetry(ctx, failure, error, delayMs, boundOf(error.code, limits, elapsedMs))
      previousMs = delayMs
      try {
        if (delayMs > 0) await ctx.clock.sleep(delayMs, signal)
      } catch (err) {
        throw signal.aborted ? abortReason(signal) : err
      }
      if (signal.aborted) throw abortReason(signal)
      ctx.attempt++
    }
  }
}
