import { abortReason, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { forgetExhausted, nextRepeat, rememberExhausted } from './answer-from-failure.js'
import type { Backoff } from './backoff/backoff.js'
import type { ExhaustedCall } from './exhausted-calls.js'
import { mayHaveLanded, ranOutOn } from './exhausted-hints.js'
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
import { refillTokens, takeTokens } from './retry-tokens.js'

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
  /** The longest `Retry-After` waited for: `maxRetryAfterMs`, else the backoff's cap. */
  readonly longestWaitMs: number
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

/** A call whose first try failed, as the retry layer found it. */
export interface FailedCall {
  readonly ctx: ToolContext
  readonly next: Next
  /** The signal the call came with: waits, hooks and repeats follow it, whatever deadline an inner layer set. */
  readonly signal: AbortSignal
  /** When the call started, on the clock; read only when `maxElapsedMs` is set or the call is a probe. */
  readonly started: number
  /** The remembered call this one repeats, when its retries ran out earlier in the run: this call is its one probe. */
  readonly probe: ExhaustedCall | undefined
}

/** One failed call while retry repeats it: the layer's settings, the call, and its repeats so far. */
interface Retrying extends FailedCall {
  readonly s: RetrySettings
  /** Calls this layer made, the failed ones included. */
  calls: number
  /** When the last request was sent, on the clock: a call that runs out is remembered from there. */
  sentAt: number
  previousMs: number | undefined
  /** One code on every attempt (503, 503, 503) reads as a dead upstream; mixed codes (a 503, then a hang) do not. */
  readonly codes: Set<string>
}

/** After a call that succeeded (first time or repeated): tokens back to the bucket, and the call is no longer exhausted. */
export function retrySucceeded(s: RetrySettings, ctx: ToolContext): void {
  if (s.store !== undefined && s.refund > 0) void refillTokens(s.store, s.refund, ctx.log)
  forgetExhausted(ctx)
}

/** After a failed call: decides, waits and calls again until a call succeeds or the retries stop. */
export async function retryAfter(s: RetrySettings, call: FailedCall, failure: unknown): Promise<void> {
  const { ctx, started } = call
  const r: Retrying = { ...call, s, calls: 1, sentAt: started, previousMs: undefined, codes: new Set() }
  const { next, signal } = r
  let err = failure
  for (;;) {
    if (!ToolError.is(err)) throw err
    r.codes.add(err.code)
    if (signal.aborted) throw abortReason(signal)
    const delayMs = await delayOrStop(r, err)
    const attempt = ctx.attempt + 1
    ctx.emit('retry.scheduled', scheduledFields(err, attempt, delayMs, attemptsFor(s, err.code)))
    ctx.log.info({ attempt, delayMs, code: err.code }, 'retrying tool call')
    await wait(ctx, delayMs, signal)
    r.previousMs = delayMs
    r.calls++
    ctx.attempt = attempt
    ctx.signal = signal
    ctx.result = undefined
    r.sentAt = ctx.clock.now()
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
async function delayOrStop(r: Retrying, err: ToolError): Promise<number> {
  const { s, ctx } = r
  const plan = planRetry(
    s.backoff,
    {
      error: err,
      effect: ctx.tool?.effect,
      calls: r.calls,
      totalCalls: ctx.attempt,
      maxAttempts: attemptsFor(s, err.code),
      elapsedMs: elapsedMs(r),
      maxElapsedMs: s.maxElapsedMs,
      previousMs: r.previousMs,
      maxRetryAfterMs: s.maxRetryAfterMs,
    },
    ctx.random,
  )
  if (!plan.retry) return stopPlanned(r, err, plan.reason)
  // This call probes one whose retries ran out: one request, no retries, and the cooldown grows if it failed too.
  if (r.calls === 1 && r.probe !== undefined) return probeFailed(r, r.probe, err)
  if (ctx.run.budget.remaining <= 0) {
    await giveUp(r, err, 'step_budget')
    throw stepBudgetExhausted(ctx, err)
  }
  const asked = await askOnRetry(r, err, plan.delayMs)
  if (!asked.retry) return stop(r, err, 'hook_stop', asked.why)
  if (s.store !== undefined) {
    const cost = err.code === 'timeout' ? s.costs.timeout : s.costs.retry
    if (!(await takeTokens(s.store, cost, ctx.log, 'retry budget store failed; not retrying'))) return stop(r, err, 'retry_budget_empty')
  }
  return asked.delayMs
}

const elapsedMs = (r: Retrying): number => (r.s.timed ? r.ctx.clock.now() - r.started : 0)

/** Stops that mean the call's retries ran out against a failing upstream (not a policy or budget saying no). */
const RAN_OUT: ReadonlySet<RetryStopReason> = new Set(['max_attempts', 'max_elapsed', 'backoff_stop'])

/**
 * The policy said stop: remembers a call that ran out, and past the ceiling ends the run. A call whose every
 * attempt failed alike (a dead upstream, or one not yet back), or a keyed write whose outcome is open, ends with a
 * hint that says what the identical repeat will get.
 */
async function stopPlanned(r: Retrying, err: ToolError, reason: RetryStopReason): Promise<never> {
  const { ctx } = r
  const ranOut = r.calls > 1 && RAN_OUT.has(reason)
  const alike = ranOut && r.codes.size === 1
  const entry = ranOut
    ? rememberExhausted(ctx, { sentAt: r.sentAt, failures: r.calls, ...(alike ? { error: err.toJSON() } : {}) })
    : undefined
  await giveUp(r, err, reason)
  if (reason === 'recovery_ceiling') throw recoveryExhausted(ctx, err)
  const told = entry !== undefined && (alike || mayHaveLanded(ctx.tool?.effect, err))
  return stopSoftly(ctx, told ? endedOn(r, err, entry) : err, reason)
}

/** The error a call that ran out ends with: its own, with the hint of what the identical repeat will get. */
function endedOn(r: Retrying, err: ToolError, entry: ExhaustedCall): ToolError {
  const { ctx } = r
  const next = nextRepeat(ctx, entry, r.s.longestWaitMs)
  return ranOutOn(err, { tool: ctx.call.name, attempts: r.calls, effect: ctx.tool?.effect, next })
}

/** A probe failed: the call stays remembered, one failure more (a longer cooldown), the failure kept only if it is the same. */
async function probeFailed(r: Retrying, probe: ExhaustedCall, err: ToolError): Promise<never> {
  const { ctx } = r
  const alike = probe.error?.code === err.code
  const entry = rememberExhausted(ctx, { sentAt: r.sentAt, failures: probe.failures + 1, ...(alike ? { error: err.toJSON() } : {}) })
  await giveUp(r, err, 'exhausted_in_run')
  const told = entry !== undefined && (alike || mayHaveLanded(ctx.tool?.effect, err))
  const next = entry === undefined ? undefined : nextRepeat(ctx, entry, r.s.longestWaitMs)
  const error =
    told && next !== undefined ? ranOutOn(err, { tool: ctx.call.name, attempts: probe.failures + 1, effect: ctx.tool?.effect, next }) : err
  return stopSoftly(ctx, error, 'exhausted_in_run')
}

async function stop(r: Retrying, err: ToolError, reason: RetryStopReason, why?: string): Promise<never> {
  await giveUp(r, err, reason)
  return stopSoftly(r.ctx, err, reason, why)
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
async function giveUp({ s, ctx, signal }: Retrying, error: ToolError, reason: RetryStopReason): Promise<void> {
  const { onGiveUp } = s
  if (onGiveUp === undefined || reason === 'not_retryable') return
  const info: RetryGiveUpInfo = { error, attempt: ctx.attempt, reason, tool: ctx.call.name, callId: ctx.call.id, signal }
  await callHook(ctx, 'onGiveUp', () => onGiveUp(info), signal, s.hookTimeoutMs)
}

// Asks onRetry about a planned repeat: the delay to wait, or why not to repeat.
async function askOnRetry(r: Retrying, error: ToolError, plannedMs: number): Promise<HookDecision> {
  const { s, ctx, signal } = r
  const { onRetry, hookTimeoutMs } = s
  if (onRetry === undefined) return { retry: true, delayMs: plannedMs }
  const leftMs = s.maxElapsedMs - elapsedMs(r)
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

/** Waits `ms` on the call's signal; a cancel while waiting ends the call with the run's reason. */
export async function wait(ctx: ToolContext, ms: number, signal: AbortSignal): Promise<void> {
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
