import type { ToolContext, ToolError } from '@shallot/core'
import { EXHAUSTED_STATE_KEY, type ExhaustedCall, exhaustedCalls, probeCooldownMs } from './exhausted-calls.js'
import { answeredFrom, mayHaveLanded, type NextRepeat } from './exhausted-hints.js'

/** The call's fingerprint, or none when its arguments cannot be fingerprinted: such a call is never remembered. */
export function fingerprintOf(ctx: ToolContext): string | undefined {
  try {
    return ctx.fingerprint
  } catch {
    return undefined
  }
}

/**
 * What an identical repeat of a call whose retries ran out gets: `answer` (the failure, no request) inside its
 * cooldown; `wait` then one request, when what is left of the cooldown is the service's own `Retry-After` and no
 * longer than retry would wait for one; else `probe`: one request, no retries. A keyed write whose outcome is open
 * is always a probe (its key makes the repeat safe, and the service's answer is the only way to learn it).
 */
export type RepeatPlan =
  | { readonly kind: 'probe'; readonly entry: ExhaustedCall }
  | { readonly kind: 'wait'; readonly ms: number; readonly entry: ExhaustedCall }
  | { readonly kind: 'answer'; readonly inMs: number; readonly error: ToolError }

/** When the entry's repeat may be sent, as a plan; `now` on the stack clock, `longestWaitMs` the longest Retry-After retry waits. */
function planOf(ctx: ToolContext, entry: ExhaustedCall, longestWaitMs: number): RepeatPlan {
  const { error } = entry
  const sinceMs = ctx.clock.now() - entry.sentAt
  // A clock that went back (a run resumed on another machine) proves nothing about the upstream: send it.
  if (error === undefined || !(sinceMs >= 0) || mayHaveLanded(ctx.tool?.effect, error)) return { kind: 'probe', entry }
  const leftMs = probeCooldownMs(entry.failures, error.retryAfterMs) - sinceMs
  if (leftMs <= 0) return { kind: 'probe', entry }
  const waitsOut = error.retryAfterMs !== undefined && error.retryAfterMs >= probeCooldownMs(entry.failures, undefined)
  if (waitsOut && leftMs <= longestWaitMs) return { kind: 'wait', ms: leftMs, entry }
  const facts = { tool: ctx.call.name, failures: entry.failures, sinceMs, inMs: leftMs, effect: ctx.tool?.effect, sentAt: entry.sentAt }
  return { kind: 'answer', inMs: leftMs, error: answeredFrom(error, facts) }
}

/**
 * The plan for this call when it repeats one whose retries ran out in this run, or `undefined` for any other call.
 * An answered repeat is told as a `retry.stopped` (`exhausted_in_run`).
 *
 * @example
 * const plan = repeatPlan(ctx, 8000)
 * if (plan?.kind === 'answer') throw plan.error
 */
export function repeatPlan(ctx: ToolContext, longestWaitMs: number): RepeatPlan | undefined {
  const fingerprint = fingerprintOf(ctx)
  const entry = fingerprint === undefined ? undefined : exhaustedCalls(ctx.run).get(fingerprint)
  if (entry === undefined) return undefined
  const plan = planOf(ctx, entry, longestWaitMs)
  if (plan.kind === 'answer') {
    const why = 'answered from the failure, no request'
    ctx.emit('retry.stopped', { attempt: ctx.attempt, code: plan.error.code, reason: 'exhausted_in_run', why })
  }
  return plan
}

/** What the model's repeat of a call that just ran out will get, for its hint: the same rule as {@link repeatPlan}. */
export function nextRepeat(ctx: ToolContext, entry: ExhaustedCall, longestWaitMs: number): NextRepeat {
  if (entry.error !== undefined && mayHaveLanded(ctx.tool?.effect, entry.error)) return { kind: 'keyed' }
  const plan = planOf(ctx, entry, longestWaitMs)
  if (plan.kind === 'wait') return { kind: 'after_retry_after', inMs: plan.ms }
  if (plan.kind === 'probe') return { kind: 'sent' }
  return { kind: 'answered', forMs: plan.inMs }
}

/**
 * Remembers a call whose request failed after its retries ran out (or a probe that failed): when its last request
 * was sent, how many failed in a row, and the failure when every one failed alike.
 */
export function rememberExhausted(ctx: ToolContext, entry: Omit<ExhaustedCall, 'fingerprint'>): ExhaustedCall | undefined {
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint === undefined) return undefined
  const calls = exhaustedCalls(ctx.run)
  calls.set({ fingerprint, ...entry })
  return calls.get(fingerprint)
}

/** A call that succeeded is no longer exhausted. Run state is read only when some call of the run ran out. */
export function forgetExhausted(ctx: ToolContext): void {
  if (ctx.run.state[EXHAUSTED_STATE_KEY] === undefined) return
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint !== undefined) exhaustedCalls(ctx.run).delete(fingerprint)
}
