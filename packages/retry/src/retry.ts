import type { Layer, Middleware, ModelMiddleware, Next, ToolContext } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { repeatPlan } from './answer-from-failure.js'
import { type Backoff, MAX_DELAY_MS } from './backoff/backoff.js'
import { backoffFromPolicy } from './backoff-from-policy.js'
import { EXHAUSTED_STATE_KEY } from './exhausted-calls.js'
import { memoryRetryBudget } from './memory-retry-budget.js'
import { isRetryBudgetStore, type RetryBudgetStore } from './retry-budget-store.js'
import type { RetryGiveUpInfo } from './retry-hooks.js'
import { type OnRetry, type RetrySettings, retryAfter, retrySucceeded, wait } from './retry-loop.js'
import { modelRetryOf } from './retry-model.js'
import { BACKOFF_NAMES, checkPolicy, retryPolicyShape, unknownBackoffMessage } from './retry-policy.js'

function isBackoff(value: unknown): value is Backoff {
  return typeof value === 'object' && value !== null && typeof (value as { next?: unknown }).next === 'function'
}

export type { OnRetry } from './retry-loop.js'

const fn = <T>(shape: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function ${shape}` })

const backoffOption = z.union([z.enum(BACKOFF_NAMES), z.custom<Backoff>(isBackoff)], {
  error: (issue) => unknownBackoffMessage(issue.input, true),
})

/**
 * `retry()`'s options, for tool calls and model calls alike: the plain-data policy, plus a backoff object and a
 * retry budget store where code wants them. The hooks (`onRetry`, `onGiveUp`, `hookTimeoutMs`) are for tool calls only.
 *
 * @example
 * retryOptionsSchema.safeParse({ backoff: fullJitter(), retryBudget: memoryRetryBudget() }).success // true
 */
export const retryOptionsSchema = z
  .object({
    ...retryPolicyShape,
    backoff: backoffOption.default('full-jitter'),
    /**
     * Token bucket against retry storms; default a fresh `memoryRetryBudget()` for each side of each `retry()` (tool
     * calls and model calls do not drain each other's); a store given here serves both; `false` turns it off.
     */
    retryBudget: z
      .union([z.literal(false), z.custom<RetryBudgetStore>(isRetryBudgetStore)], {
        error: 'must be a RetryBudgetStore (tryTake, refill, available), e.g. memoryRetryBudget(), or false',
      })
      .optional(),
    /**
     * Awaited before each repeat: answer nothing to go on, `{ delayMs }` to wait at least that long,
     * or `'stop'` to give the error back now. A throw, a bad answer or no answer within
     * `hookTimeoutMs` stops retrying (logged). Tool calls only. Code only: a config file cannot hold a function.
     */
    onRetry: fn<OnRetry>("(info) => undefined | 'stop' | { delayMs }").optional(),
    /** Awaited when retry gives up on a retryable error (any stop reason but `not_retryable`); cannot change the outcome. Tool calls only. */
    onGiveUp: fn<(info: RetryGiveUpInfo) => void | Promise<void>>('(info) => void').optional(),
    /** Longest wait for one hook call; past it the hook's answer is ignored and retrying stops. Default 10,000 ms. Tool calls only. */
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

/** `retry()`'s options, parsed: defaults filled in. */
type ParsedRetryOptions = z.output<typeof retryOptionsSchema>

const parseRetryOptions = optionsParser('retry()', retryOptionsSchema)

/** How many calls a timeout gets unless `perCode.timeout` says otherwise: the original one and one retry. */
const DEFAULT_TIMEOUT_ATTEMPTS = 2

/** What the tool side makes of the parsed options, once per layer. */
function retrySettings(parsed: ParsedRetryOptions, backoff: Backoff): RetrySettings {
  const { maxAttempts, onRetry, onGiveUp, hookTimeoutMs } = parsed
  const attemptsByCode = new Map(Object.entries(parsed.perCode).map(([code, { maxAttempts }]) => [code, maxAttempts]))
  if (!attemptsByCode.has('timeout')) attemptsByCode.set('timeout', Math.min(DEFAULT_TIMEOUT_ATTEMPTS, maxAttempts))
  const maxElapsedMs = parsed.maxElapsedMs ?? Number.POSITIVE_INFINITY
  const store = budgetOf(parsed)
  return {
    backoff,
    maxAttempts,
    attemptsByCode,
    maxElapsedMs,
    timed: maxElapsedMs !== Number.POSITIVE_INFINITY,
    maxRetryAfterMs: parsed.maxRetryAfterMs,
    longestWaitMs: parsed.maxRetryAfterMs ?? backoff.capMs ?? MAX_DELAY_MS,
    costs: parsed.retryBudgetCosts,
    store,
    refund: store === undefined ? 0 : parsed.retryBudgetCosts.success,
    onRetry,
    onGiveUp,
    hookTimeoutMs,
    capMs: backoff.capMs ?? Number.POSITIVE_INFINITY,
  }
}

/** The bucket one side spends from: the store given, a fresh one by default, none for `false`. */
function budgetOf(parsed: ParsedRetryOptions): RetryBudgetStore | undefined {
  return parsed.retryBudget === false ? undefined : (parsed.retryBudget ?? memoryRetryBudget())
}

/** What `retry()` returns: one layer, with a side for tool calls and a side for model calls. */
export interface RetryLayer extends Layer {
  readonly name: 'retry'
  /** Listed in `middleware`: repeats a failed tool call. */
  readonly wrapToolCall: Middleware
  /** Listed in `modelMiddleware`: repeats a failed model attempt. */
  readonly wrapModelCall: ModelMiddleware
}

/**
 * Repeats a failed call when the error says it is transient and repeating is safe, with full-jitter backoff by
 * default (a `retryAfterMs` / `Retry-After` is a floor), abortably on the run's signal, a token bucket against
 * retry storms. One layer for both lists: in `middleware` it repeats tool calls, in `modelMiddleware` model calls,
 * each side from the same options, built once here. Takes the plain-data policy, or a backoff object alone.
 *
 * - Tool calls: `retryable` errors only, and for a `write` tool only `safeToRepeat` ones; never more than 6 calls
 *   in all (past that the run ends with `recovery_exhausted`); when it gives up, the last error goes back to the
 *   model, with a hint that does not invite the repeat when every attempt failed alike. A timeout gets 2 calls unless `perCode.timeout` says otherwise; `maxRetryAfterMs` defaults to
 *   the backoff's cap.
 * - Model calls: failures core calls transient (a retryable ToolError, 408/429/5xx, a dropped connection, a
 *   timeout), each repeat one more attempt of the run's step budget; a timeout gets `maxAttempts` like any other
 *   failure; `maxRetryAfterMs` defaults to 60 s, since a model call that gives up ends the run. The hooks are not
 *   called for model calls.
 *
 * @example
 * const retrying = retry({ maxAttempts: 4, perCode: { rate_limited: { maxAttempts: 5 } } })
 * createAgent({ model, tools, middleware: [retrying, timeout({ ms: 5000 })], modelMiddleware: [retrying, timeout()] })
 * createStack({ middleware: [retry(decorrelatedJitter({ baseMs: 100, capMs: 2000 }))], tools })
 */
export function retry(options?: RetryOptions | Backoff): RetryLayer {
  const parsed = parseRetryOptions(isBackoff(options) ? { backoff: options } : options)
  const backoff = isBackoff(parsed.backoff) ? parsed.backoff : backoffFromPolicy({ ...parsed, backoff: parsed.backoff })
  return Object.freeze({
    name: 'retry',
    wrapToolCall: toolRetryOf(retrySettings(parsed, backoff)),
    wrapModelCall: modelRetryOf(parsed, backoff, budgetOf(parsed)),
  })
}

/**
 * The tool side: the first call goes through as it is; only a failure enters the retry loop. A repeat of a call
 * whose retries ran out in this run is answered from that failure inside its cooldown, or sent once (a probe).
 */
function toolRetryOf(settings: RetrySettings): Middleware {
  const { timed, longestWaitMs } = settings
  return async function retry(ctx: ToolContext, next: Next): Promise<void> {
    // Inner layers may swap ctx.signal for their own deadline; waits and repeats use the signal this call came with.
    const signal = ctx.signal
    const plan = ctx.run.state[EXHAUSTED_STATE_KEY] === undefined ? undefined : repeatPlan(ctx, longestWaitMs)
    if (plan?.kind === 'answer') throw plan.error
    if (plan?.kind === 'wait') {
      ctx.emit('retry.scheduled', { attempt: ctx.attempt, delayMs: plan.ms, code: plan.entry.error?.code, probe: true })
      await wait(ctx, plan.ms, signal)
    }
    const started = timed || plan !== undefined ? ctx.clock.now() : 0
    try {
      await next()
    } catch (err) {
      return retryAfter(settings, { ctx, next, signal, started, probe: plan?.entry }, err)
    }
    retrySucceeded(settings, ctx)
  }
}
