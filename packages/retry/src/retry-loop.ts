import { abortReason, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import type { Backoff } from './backoff/backoff.js'
import { ANSWER_FROM_FAILURE_MS, EXHAUSTED_STATE_KEY, exhaustedCalls, failureFrom, ranOutOn } from './exhausted-calls.js'
import { MAX_TOTAL_CALLS, planRetry, type RetryStopReason } from './plan-retry.js'
import type { RetryBudgetStore } from './retry-budget-store.js'
import {
  callHook,
  type HookDecision,
  type RetryAttemptInfo,
  type RetryGiveUpInfo,
  type RetryHookAnswer,
  readAnswer,
} from './retry-hooks.js'

/** `onRetry`'s type: sync or async, returning nothing, `'stop'` or `{ delayMs }`. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook with a path that returns nothing is a void function, sync or async.
export type OnRetry = (info: RetryAttemptInfo) => RetryHookAnswer | void | PromiseLike<RetryHookAnswer | void>

/** What one `retry()` made of its options, once: every call it handles reads these. */
export interface RetrySettings {
  readonly backoff: Backoff
  readonly maxAttempts: number
  /** `maxAttempts` per error code, `timeout` always present. */
  readonly attemptsByCode: ReadonlyMap<string, number>
  readonly maxElapsedMs: number
  /** Whether `maxElapsedMs` is finite: only then is the clock read when a call starts. */
  readonly timed: boolean
  readonly maxRetryAfterMs: number | undefined
  readonly costs: { readonly retry: number; readonly timeout: number }
  readonly store: RetryBudgetStore | undefined
  /** Tokens a success gives back: 0 without a store. */
  readonly refund: number
  readonly onRetry: OnRetry | undefined
  readonly onGiveUp: ((info: RetryGiveUpInfo) => void | Promise<void>) | undefined
  readonly hookTimeoutMs: number
  /** The backoff's cap: the longest wait an `onRetry` answer may ask for. */
  readonly capMs: number
}

/** One failed call's repeats so far. */
interface Repeats {
  /** Calls this layer made, the failed ones included. */
  calls: number
  previousMs: number | undefined
  /** One code on every attempt (503, 503, 503) reads as a dead upstream; mixed codes (a 503, then a hang) do not. */
  readonly codes: Set<string>
  readonly exhausted: ReturnType<typeof exhaustedCalls>
}

/** After a call that succeeded (first time or repeated): a token back to the bucket, and the call is no longer exhausted. */
export function retrySucceeded(s: RetrySettings, ctx: ToolContext): void {
  if (s.refund > 0) giveBack(s, ctx)
  forgetExhausted(ctx)
}

/** After a failed call: decides, waits and calls again until a call succeeds or the retries stop. */
export async function retryAfter(
  s: RetrySettings,
  ctx: ToolContext,
  next: Next,
  signal: AbortSignal,
  started: number,
  failure: unknown,
): Promise<void> {
  const repeats: Repeats = { calls: 1, previousMs: undefined, codes: new Set(), exhausted: exhaustedCalls(ctx.run) }
  let err = failure
  for (;;) {
    if (!ToolError.is(err)) throw err
    repeats.codes.add(err.code)
    if (signal.aborted) throw abortReason(signal)
    const delayMs = await delayOrStop(s, ctx, err, repeats, signal, started)
    const attempt = ctx.attempt + 1
    ctx.emit('retry.scheduled', scheduledFields(err, attempt, delayMs, attemptsFor(s, err.code)))
    ctx.log.info({ attempt, delayMs, code: err.code }, 'retrying tool call')
    await wait(ctx, delayMs, signal)
    repeats.previousMs = delayMs
    repeats.calls++
    ctx.attempt = attempt
    ctx.signal = signal
    // Assigned, not deleted: deleting a property of the context would turn it into a slow dictionary object.
    ctx.result = undefined
    try {
      await next()
    } catch (again) {
      err = again
      continue
    }
    retrySucceeded(s, ctx)
    return
  }
}

/** The wait before repeating the failed call, or a throw that ends it: the error (softly), or a LoopError that ends the run. */
async function delayOrStop(
  s: RetrySettings,
  ctx: ToolContext,
  err: ToolError,
  repeats: Repeats,
  signal: AbortSignal,
  started: number,
): Promise<number> {
  const elapsedMs = s.timed ? ctx.clock.now() - started : 0
  const plan = planRetry(
    s.backoff,
    {
      error: err,
      effect: ctx.tool?.effect,
      calls: repeats.calls,
      totalCalls: ctx.attempt,
      maxAttempts: attemptsFor(s, err.code),
      elapsedMs,
      maxElapsedMs: s.maxElapsedMs,
      previousMs: repeats.previousMs,
      maxRetryAfterMs: s.maxRetryAfterMs,
    },
    ctx.random,
  )
  if (!plan.retry) return stopPlanned(s, ctx, err, plan.reason, repeats, signal)
  // The upstream failed every retry of this very call long enough ago that it may be back: one request, no retries.
  if (repeats.calls === 1 && repeats.exhausted.has(fingerprintOf(ctx) ?? '')) return stop(s, ctx, err, 'exhausted_in_run', signal)
  if (ctx.run.budget.remaining <= 0) {
    await giveUp(s, ctx, err, 'step_budget', signal)
    throw stepBudgetExhausted(ctx, err)
  }
  const leftMs = s.maxElapsedMs - (s.timed ? ctx.clock.now() - started : 0)
  const asked = await askOnRetry(s, ctx, err, plan.delayMs, leftMs, signal)
  if (!asked.retry) return stop(s, ctx, err, 'hook_stop', signal, asked.why)
  if (!(await spendRetryTokens(s, ctx, err))) return stop(s, ctx, err, 'retry_budget_empty', signal)
  return asked.delayMs
}

/** Stops that mean the call's retries ran out against a failing upstream (not a policy or budget saying no). */
const RAN_OUT: ReadonlySet<RetryStopReason> = new Set(['max_attempts', 'max_elapsed', 'backoff_stop'])

/** The policy said stop: remembers a call that ran out (decision 410), and past the ceiling ends the run. */
async function stopPlanned(
  s: RetrySettings,
  ctx: ToolContext,
  err: ToolError,
  reason: RetryStopReason,
  repeats: Repeats,
  signal: AbortSignal,
): Promise<never> {
  const ranOut = repeats.calls > 1 && RAN_OUT.has(reason)
  const deadUpstream = ranOut && repeats.codes.size === 1
  if (ranOut) rememberExhausted(ctx, repeats.exhausted, deadUpstream ? err : undefined)
  await giveUp(s, ctx, err, reason, signal)
  if (reason === 'recovery_ceiling') throw recoveryExhausted(ctx, err)
  return stopSoftly(ctx, deadUpstream ? ranOutOn(err, ctx.call.name, repeats.calls) : err, reason)
}

async function stop(
  s: RetrySettings,
  ctx: ToolContext,
  err: ToolError,
  reason: RetryStopReason,
  signal: AbortSignal,
  why?: string,
): Promise<never> {
  await giveUp(s, ctx, err, reason, signal)
  return stopSoftly(ctx, err, reason, why)
}

function stopSoftly(ctx: ToolContext, error: ToolError, reason: RetryStopReason, why?: string): never {
  if (reason !== 'not_retryable') {
    ctx.emit(
      'retry.stopped',
      why === undefined ? { attempt: ctx.attempt, code: error.code, reason } : { attempt: ctx.attempt, code: error.code, reason, why },
    )
  }
  throw error
}

const attemptsFor = (s: RetrySettings, code: string): number => s.attemptsByCode.get(code) ?? s.maxAttempts

// Tells onGiveUp (when there is one and retry had a say) before the call ends.
async function giveUp(s: RetrySettings, ctx: ToolContext, error: ToolError, reason: RetryStopReason, signal: AbortSignal): Promise<void> {
  const { onGiveUp } = s
  if (onGiveUp === undefined || reason === 'not_retryable') return
  const info: RetryGiveUpInfo = { error, attempt: ctx.attempt, reason, tool: ctx.call.name, callId: ctx.call.id, signal }
  await callHook(ctx, 'onGiveUp', () => onGiveUp(info), signal, s.hookTimeoutMs)
}

// Asks onRetry about a planned repeat: the delay to wait, or why not to repeat.
async function askOnRetry(
  s: RetrySettings,
  ctx: ToolContext,
  error: ToolError,
  plannedMs: number,
  leftMs: number,
  signal: AbortSignal,
): Promise<HookDecision> {
  const { onRetry, hookTimeoutMs } = s
  if (onRetry === undefined) return { retry: true, delayMs: plannedMs }
  const info: RetryAttemptInfo = { error, attempt: ctx.attempt, delayMs: plannedMs, tool: ctx.call.name, callId: ctx.call.id, signal }
  const called = await callHook(ctx, 'onRetry', () => onRetry(info), signal, hookTimeoutMs)
  if (!called.ok) return { retry: false, why: called.why === 'threw' ? 'hook threw' : `hook did not settle in ${hookTimeoutMs} ms` }
  let decision: HookDecision
  try {
    decision = readAnswer(called.value, plannedMs, Math.min(s.capMs, leftMs))
  } catch (err) {
    ctx.log.error({ err, hook: 'onRetry' }, 'retry onRetry answered something that threw when read; not retrying')
    return { retry: false, why: 'answer threw when read' }
  }
  if (!decision.retry && decision.why !== 'answered stop')
    ctx.log.warn({ why: decision.why }, 'retry onRetry answered something unusable; not retrying')
  return decision
}

async function spendRetryTokens(s: RetrySettings, ctx: ToolContext, error: ToolError): Promise<boolean> {
  const { store, costs } = s
  if (store === undefined) return true
  const cost = error.code === 'timeout' ? costs.timeout : costs.retry
  try {
    const taken = store.tryTake(cost)
    // Only true is yes: a store answering 'false', 1 or anything else has not said the tokens were taken.
    return (typeof taken === 'boolean' ? taken : await taken) === true
  } catch (err) {
    // A budget that cannot be read fails closed: no retry beats an unbounded storm.
    ctx.log.warn({ err }, 'retry budget store failed; not retrying')
    return false
  }
}

function giveBack(s: RetrySettings, ctx: ToolContext): void {
  let done: unknown
  try {
    done = s.store?.refill(s.refund)
  } catch (err) {
    refillFailed(ctx, err)
    return
  }
  if (isThenable(done)) done.then(undefined, (err: unknown) => refillFailed(ctx, err))
}

/**
 * The fields of `retry.scheduled`: the attempt about to run, of how many the policy allows for this
 * code, the delay, the code, and, when the failure carried them, the server's `retryAfterMs` and
 * the HTTP `status` an error classifier put in its details.
 */
function scheduledFields(err: ToolError, attempt: number, delayMs: number, maxAttempts: number): Record<string, unknown> {
  const fields: Record<string, unknown> = { attempt, maxAttempts, delayMs, code: err.code }
  if (err.retryAfterMs !== undefined) fields.retryAfterMs = err.retryAfterMs
  const status = err.details?.status
  if (typeof status === 'number' && Number.isInteger(status)) fields.status = status
  return fields
}

function fingerprintOf(ctx: ToolContext): string | undefined {
  try {
    return ctx.fingerprint
  } catch {
    return undefined
  }
}

// Without `error` the repeat is not answered from the failure: it gets one request and no retries (decision 407).
function rememberExhausted(ctx: ToolContext, exhausted: ReturnType<typeof exhaustedCalls>, error: ToolError | undefined): void {
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint !== undefined) exhausted.add(fingerprint, ctx.clock.now(), error)
}

/**
 * An identical call whose retries ran out less than a minute ago in this run is answered from that failure,
 * without a request (decision 410): the upstream failed every attempt, and the model's repeat would only
 * spend another request and a model turn to learn it again.
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

// Reads run state only when some call of the run ran out: the happy path computes no fingerprint.
function forgetExhausted(ctx: ToolContext): void {
  if (ctx.run.state[EXHAUSTED_STATE_KEY] === undefined) return
  const fingerprint = fingerprintOf(ctx)
  if (fingerprint !== undefined) exhaustedCalls(ctx.run).delete(fingerprint)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'
}

// A lost refill only makes the bucket stricter for a while; it must never fail the call that succeeded.
function refillFailed(ctx: ToolContext, err: unknown): void {
  ctx.log.warn({ err }, 'retry budget store failed to refill')
}

async function wait(ctx: ToolContext, ms: number, signal: AbortSignal): Promise<void> {
  try {
    if (ms > 0) await ctx.clock.sleep(ms, signal)
  } catch (err) {
    if (signal.aborted) throw abortReason(signal)
    throw err
  }
  if (signal.aborted) throw abortReason(signal)
}

function recoveryExhausted(ctx: ToolContext, error: ToolError): LoopError {
  const tool = ctx.call.name
  ctx.emit('retry.stopped', { attempt: ctx.attempt, code: error.code, reason: 'recovery_ceiling' })
  return new LoopError(
    'recovery_exhausted',
    `Tool '${tool}' failed ${ctx.attempt} times (last: ${error.code}) and the retry policy wanted more; ` +
      `no policy may call a tool more than ${MAX_TOTAL_CALLS} times`,
    { cause: error, details: { attempts: ctx.attempt, tool, lastError: error.toJSON() } },
  )
}

function stepBudgetExhausted(ctx: ToolContext, error: ToolError): LoopError {
  const { maxSteps, used } = ctx.run.budget
  const next = `tool:${ctx.call.name}`
  ctx.emit('retry.stopped', { attempt: ctx.attempt, code: error.code, reason: 'step_budget' })
  return new LoopError('budget_exhausted', `step budget exhausted: all ${maxSteps} steps are spent (next was a retry of ${next})`, {
    cause: error,
    details: { maxSteps, used, next, lastError: error.toJSON() },
  })
}
