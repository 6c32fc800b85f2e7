import type { ToolContext, ToolError } from '@shallot/core'
import { ANSWER_FROM_FAILURE_MS, EXHAUSTED_STATE_KEY, exhaustedCalls, failureFrom } from './exhausted-calls.js'

/** The call's fingerprint, or none when its arguments cannot be fingerprinted: such a call is never remembered. */
export function fingerprintOf(ctx: ToolContext): string | undefined {
  try {
    return ctx.fingerprint
  } catch {
    return undefined
  }
}

/**
 * An identical call whose retries ran out less than a minute ago in this run is answered from that failure,
 * without a request: the upstream failed every attempt, and the model's repeat would only spend another
 * request and a model turn to learn it again.
 */
export function answerFromFailure(ctx: ToolContext): ToolError | undefined {
  const fingerprint = fingerprintOf(ctx)
  const entry = fingerprint === undefined ? undefined : exhaustedCalls(ctx.run).get(fingerprint)
  if (entry?.error === undefined) return undefined
  const sinceMs = ctx.clock.now() - entry.at
  // A clock that went back (a run resumed on another machine) proves nothing about the upstream: send it.
  if (!(sinceMs >= 0 && sinceMs < ANSWER_FROM_FAILURE_MS)) return undefined
  const error = failureFrom({ ...entry, error: entry.error }, ctx.call.name, sinceMs)
  ctx.emit('retry.stopped', {
    attempt: ctx.attempt,
    code: error.code,
    reason: 'exhausted_in_run',
    why: 'answered from the failure, no request',
  })
  return error
}

/**
 * Remembers a call whose retries ran out. With `error` (every attempt failed alike: a dead upstream) its identical
 * repeat is answered from it; without, the repeat gets one request and no retries, since the upstream may be back.
 */
export function rememberExhausted(ctx: ToolContext, error: ToolError | undefined): void {
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint !== undefined) exhaustedCalls(ctx.run).add(fingerprint, ctx.clock.now(), error)
}

/** A call that succeeded is no longer exhausted. Run state is read only when some call of the run ran out. */
export function forgetExhausted(ctx: ToolContext): void {
  if (ctx.run.state[EXHAUSTED_STATE_KEY] === undefined) return
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint !== undefined) exhaustedCalls(ctx.run).delete(fingerprint)
}

/** Whether this very call's retries ran out earlier in the run. */
export function ranOutBefore(ctx: ToolContext): boolean {
  const fingerprint = fingerprintOf(ctx)
  return fingerprint !== undefined && exhaustedCalls(ctx.run).has(fingerprint)
}
