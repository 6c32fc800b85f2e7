import { abortReason, LoopError, type Middleware, type Next, type ToolContext, ToolError, trustedMiddleware } from '@shallot/core'
import { callNext, optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { Backoff } from './backoff/backoff.js'
import { backoffFromPolicy } from './backoff-from-policy.js'
import { ANSWER_FROM_FAILURE_MS, EXHAUSTED_STATE_KEY, exhaustedCalls, failureFrom, ranOutOn } from './exhausted-calls.js'
import { memoryRetryBudget } from './memory-retry-budget.js'
import { MAX_TOTAL_CALLS, planRetry, type RetryStopReason } from './plan-retry.js'
import { isRetryBudgetStore, type RetryBudgetStore } from './retry-budget-store.js'
import {
  callHook,
  type HookDecision,
  type RetryAttemptInfo,
  type RetryGiveUpInfo,
  type RetryHookAnswer,
  readAnswer,
} from './retry-hooks.js'
import { BACKOFF_NAMES, checkPolicy, retryPolicyShape, unknownBackoffMessage } from './retry-policy.js'

function isBackoff(value: unknown): value is Backoff {
  return typeof value === 'object' && value !== null && typeof (value as { next?: unknown }).next === 'function'
}

/** `onRetry`'s type: sync or async, returning nothing, `'stop'` or `{ delayMs }`. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook with a path that returns nothing is a void function, sync or async.
export type OnRetry = (info: RetryAttemptInfo) => RetryHookAnswer | void | PromiseLike<RetryHookAnswer | void>

const fn = <T>(shape: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function ${shape}` })

const backoffOption = z.union([z.enum(BACKOFF_NAMES), z.custom<Backoff>(isBackoff)], {
  error: (issue) => unknownBackoffMessage(issue.input, true),
})

/**
 * `retry()`'s options: the plain-data policy, plus a backoff object and a retry budget store where code wants them.
 *
 * @example
 * retryOptionsSchema.safeParse({ backoff: fullJitter(), retryBudget: memoryRetryBudget() }).success // true
 */
export const retryOptionsSchema = z
  .object({
    ...retryPolicyShape,
    backoff: backoffOption.default('full-jitter'),
    /** Token bucket against retry storms; default a fresh `memoryRetryBudget()` per `retry()`; `false` turns it off. */
    retryBudget: z
      .union([z.literal(false), z.custom<RetryBudgetStore>(isRetryBudgetStore)], {
        error: 'must be a RetryBudgetStore (tryTake, refill, available), e.g. memoryRetryBudget(), or false',
      })
      .optional(),
    /**
     * Awaited before each repeat: answer nothing to go on, `{ delayMs }` to wait at least that long,
     * or `'stop'` to give the error back now. A throw, a bad answer or no answer within
     * `hookTimeoutMs` stops retrying (logged). Code only: a config file cannot hold a function.
     */
    onRetry: fn<OnRetry>("(info) => undefined | 'stop' | { delayMs }").optional(),
    /** Awaited when retry gives up on a retryable error (any stop reason but `not_retryable`); cannot change the outcome. */
    onGiveUp: fn<(info: RetryGiveUpInfo) => void | Promise<void>>('(info) => void').optional(),
    /** Longest wait for one hook call; past it the hook's answer is ignored and retrying stops. Default 10,000 ms. */
    hookTimeoutMs: z.number().int().positive().max(600_000).default(10_000),
  })
  .strict()
  .superRefine((options, ctx) => {
    checkPolicy(options, ctx)
    if (!isBackoff(options.backoff)) return
    for (const key of ['baseMs', 'capMs'] as const) {
      if (options[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `has no effect with a backoff object; give it to the backoff instead, e.g. fullJitter({ ${key}: ${options[key]} })`,
        })
      }
    }
  })

/** What `retry()` accepts (every field optional). */
export type RetryOptions = z.input<typeof retryOptionsSchema>

const parseRetryOptions = optionsParser('retry()', retryOptionsSchema)

/** How many calls a timeout gets unless `perCode.timeout` says otherwise: the original one and one retry. */
const DEFAULT_TIMEOUT_ATTEMPTS = 2

/**
 * Repeats a failed tool call when the error says it is transient and repeating is safe: `retryable` errors only,
 * and for a `write` tool only `safeToRepeat` ones. Waits with full-jitter backoff by default (`retryAfterMs` is a floor),
 * abortably on the run's signal; never more than 6 calls in all (past that the run ends with `recovery_exhausted`);
 * a token bucket stops retry storms. When it gives up, the last error goes back to the model unedited.
 * Takes the plain-data policy, or a backoff object alone.
 *
 * @example
 * createStack({ middleware: [retry({ maxAttempts: 4, perCode: { rate_limited: { maxAttempts: 5 } } }), timeout({ ms: 5000 })], tools })
 * createStack({ middleware: [retry(decorrelatedJitter({ baseMs: 100, capMs: 2000 }))], tools })
 */
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

export function retry(options?: RetryOptions | Backoff): Middleware {
  const parsed = parseRetryOptions(isBackoff(options) ? { backoff: options } : options)
  const backoff = isBackoff(parsed.backoff) ? parsed.backoff : backoffFromPolicy({ ...parsed, backoff: parsed.backoff })
  const maxAttempts = parsed.maxAttempts
  const attemptsByCode = new Map(Object.entries(parsed.perCode).map(([code, { maxAttempts }]) => [code, maxAttempts]))
  if (!attemptsByCode.has('timeout')) attemptsByCode.set('timeout', Math.min(DEFAULT_TIMEOUT_ATTEMPTS, maxAttempts))
  const maxElapsedMs = parsed.maxElapsedMs ?? Number.POSITIVE_INFINITY
  const timed = maxElapsedMs !== Number.POSITIVE_INFINITY
  const costs = parsed.retryBudgetCosts
  const store = parsed.retryBudget === false ? undefined : (parsed.retryBudget ?? memoryRetryBudget())
  const refund = store === undefined ? 0 : costs.success
  const { onRetry, onGiveUp, hookTimeoutMs } = parsed
  const capMs = backoff.capMs ?? Number.POSITIVE_INFINITY

  function stopSoftly(ctx: ToolContext, error: ToolError, reason: RetryStopReason, why?: string): never {
    if (reason !== 'not_retryable') {
      ctx.emit(
        'retry.stopped',
        why === undefined ? { attempt: ctx.attempt, code: error.code, reason } : { attempt: ctx.attempt, code: error.code, reason, why },
      )
    }
    throw error
  }

  // Tells onGiveUp (when there is one and retry had a say) before the call ends with `outcome`.
  async function giveUp(ctx: ToolContext, error: ToolError, reason: RetryStopReason, signal: AbortSignal): Promise<void> {
    if (onGiveUp === undefined || reason === 'not_retryable') return
    const info: RetryGiveUpInfo = { error, attempt: ctx.attempt, reason, tool: ctx.call.name, callId: ctx.call.id, signal }
    await callHook(ctx, 'onGiveUp', () => onGiveUp(info), signal, hookTimeoutMs)
  }

  // Asks onRetry about a planned repeat: the delay to wait, or why not to repeat.
  async function askOnRetry(
    ctx: ToolContext,
    error: ToolError,
    plannedMs: number,
    leftMs: number,
    signal: AbortSignal,
  ): Promise<HookDecision> {
    if (onRetry === undefined) return { retry: true, delayMs: plannedMs }
    const info: RetryAttemptInfo = { error, attempt: ctx.attempt, delayMs: plannedMs, tool: ctx.call.name, callId: ctx.call.id, signal }
    const called = await callHook(ctx, 'onRetry', () => onRetry(info), signal, hookTimeoutMs)
    if (!called.ok) return { retry: false, why: called.why === 'threw' ? 'hook threw' : `hook did not settle in ${hookTimeoutMs} ms` }
    let decision: HookDecision
    try {
      decision = readAnswer(called.value, plannedMs, Math.min(capMs, leftMs))
    } catch (err) {
      ctx.log.error({ err, hook: 'onRetry' }, 'retry onRetry answered something that threw when read; not retrying')
      return { retry: false, why: 'answer threw when read' }
    }
    if (!decision.retry && decision.why !== 'answered stop')
      ctx.log.warn({ why: decision.why }, 'retry onRetry answered something unusable; not retrying')
    return decision
  }

  async function spendRetryTokens(ctx: ToolContext, error: ToolError): Promise<boolean> {
    if (store === undefined) return true
    const cost = error.code === 'timeout' ? costs.timeout : costs.retry
    try {
      const taken = store.tryTake(cost)
      return typeof taken === 'boolean' ? taken : await taken
    } catch (err) {
      // A budget that cannot be read fails closed: no retry beats an unbounded storm.
      ctx.log.warn({ err }, 'retry budget store failed; not retrying')
      return false
    }
  }

  function giveBack(ctx: ToolContext): void {
    let done: unknown
    try {
      done = store?.refill(refund)
    } catch (err) {
      refillFailed(ctx, err)
      return
    }
    if (isThenable(done)) done.then(undefined, (err: unknown) => refillFailed(ctx, err))
  }

  /** After a failed call: decides, waits and calls again until a call succeeds or the retries stop. */
  async function retryAfter(ctx: ToolContext, next: Next, signal: AbortSignal, started: number, failure: unknown): Promise<void> {
    let err = failure
    let calls = 1
    let previousMs: number | undefined
    const exhausted = exhaustedCalls(ctx.run)
    // One code on every attempt (503, 503, 503) reads as a dead upstream; mixed codes (a 503, then a hang) do not.
    const codes = new Set<string>()
    for (;;) {
      if (!ToolError.is(err)) throw err
      codes.add(err.code)
      if (signal.aborted) throw abortReason(signal)
      const plan = planRetry(
        backoff,
        {
          error: err,
          effect: ctx.tool?.effect,
          calls,
          totalCalls: ctx.attempt,
          maxAttempts: attemptsByCode.get(err.code) ?? maxAttempts,
          elapsedMs: timed ? ctx.clock.now() - started : 0,
          maxElapsedMs,
          previousMs,
          maxRetryAfterMs: parsed.maxRetryAfterMs,
        },
        ctx.random,
      )
      if (!plan.retry) {
        const deadUpstream = calls > 1 && RAN_OUT.has(plan.reason) && codes.size === 1
        if (calls > 1 && RAN_OUT.has(plan.reason)) rememberExhausted(ctx, exhausted, deadUpstream ? err : undefined)
        await giveUp(ctx, err, plan.reason, signal)
        if (plan.reason === 'recovery_ceiling') throw recoveryExhausted(ctx, err)
        stopSoftly(ctx, deadUpstream ? ranOutOn(err, ctx.call.name, calls) : err, plan.reason)
      }
      // The upstream failed every retry of this very call long enough ago that it may be back: one request, no retries.
      if (calls === 1 && exhausted.has(fingerprintOf(ctx) ?? '')) {
        await giveUp(ctx, err, 'exhausted_in_run', signal)
        stopSoftly(ctx, err, 'exhausted_in_run')
      }
      if (ctx.run.budget.remaining <= 0) {
        await giveUp(ctx, err, 'step_budget', signal)
        throw stepBudgetExhausted(ctx, err)
      }
      const leftMs = maxElapsedMs - (timed ? ctx.clock.now() - started : 0)
      const asked = await askOnRetry(ctx, err, plan.delayMs, leftMs, signal)
      if (!asked.retry) {
        await giveUp(ctx, err, 'hook_stop', signal)
        stopSoftly(ctx, err, 'hook_stop', asked.why)
      }
      const delayMs = asked.delayMs
      if (!(await spendRetryTokens(ctx, err))) {
        await giveUp(ctx, err, 'retry_budget_empty', signal)
        stopSoftly(ctx, err, 'retry_budget_empty')
      }
      const attempt = ctx.attempt + 1
      ctx.emit('retry.scheduled', scheduledFields(err, attempt, delayMs, attemptsByCode.get(err.code) ?? maxAttempts))
      ctx.log.info({ attempt, delayMs, code: err.code }, 'retrying tool call')
      await wait(ctx, delayMs, signal)
      previousMs = delayMs
      calls++
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
      if (refund > 0) giveBack(ctx)
      forgetExhausted(ctx)
      return
    }
  }

  function succeeded(ctx: ToolContext): void {
    if (refund > 0) giveBack(ctx)
    forgetExhausted(ctx)
  }

  // The first call is a reaction, not an awaiting frame: a call blocked in the tool holds one closure here, and
  // only a failure enters the retry loop.
  const middleware: Middleware = function retry(ctx: ToolContext, next: Next): Promise<void> {
    // Inner layers may swap ctx.signal for their own deadline; waits and repeats use the signal this call came
    // with, made real only if a retry must wait on it.
    if (ctx.run.state[EXHAUSTED_STATE_KEY] !== undefined) {
      const answered = answerFromFailure(ctx)
      if (answered !== undefined) return Promise.reject(answered)
    }
    const source = ctx.currentSignal()
    const started = timed ? ctx.clock.now() : 0
    return callNext(next).then(
      () => succeeded(ctx),
      (err: unknown) => retryAfter(ctx, next, source instanceof AbortSignal ? source : source.signal, started, err),
    )
  }
  // Keeps the onion's contract by construction (docs/decisions/270-compose-fast-path.md): compose calls it without the misuse bookkeeping.
  trustedMiddleware(middleware)
  return middleware
}

/** Stops that mean the call's retries ran out against a failing upstream (not a policy or budget saying no). */
const RAN_OUT: ReadonlySet<RetryStopReason> = new Set(['max_attempts', 'max_elapsed', 'backoff_stop'])

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
function answerFromFailure(ctx: ToolContext): ToolError | undefined {
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
