import { type Middleware, type Next, type ToolContext, trustedMiddleware } from '@shallot/core'
import { callNext, optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { Backoff } from './backoff/backoff.js'
import { backoffFromPolicy } from './backoff-from-policy.js'
import { EXHAUSTED_STATE_KEY } from './exhausted-calls.js'
import { memoryRetryBudget } from './memory-retry-budget.js'
import { isRetryBudgetStore, type RetryBudgetStore } from './retry-budget-store.js'
import type { RetryGiveUpInfo } from './retry-hooks.js'
import { answerFromFailure, type OnRetry, type RetrySettings, retryAfter, retrySucceeded } from './retry-loop.js'
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

/** What `retry()` makes of its parsed options, once per layer. */
function retrySettings(parsed: z.output<typeof retryOptionsSchema>): RetrySettings {
  const backoff = isBackoff(parsed.backoff) ? parsed.backoff : backoffFromPolicy({ ...parsed, backoff: parsed.backoff })
  const { maxAttempts, onRetry, onGiveUp, hookTimeoutMs } = parsed
  const attemptsByCode = new Map(Object.entries(parsed.perCode).map(([code, { maxAttempts }]) => [code, maxAttempts]))
  if (!attemptsByCode.has('timeout')) attemptsByCode.set('timeout', Math.min(DEFAULT_TIMEOUT_ATTEMPTS, maxAttempts))
  const maxElapsedMs = parsed.maxElapsedMs ?? Number.POSITIVE_INFINITY
  const store = parsed.retryBudget === false ? undefined : (parsed.retryBudget ?? memoryRetryBudget())
  return {
    backoff,
    maxAttempts,
    attemptsByCode,
    maxElapsedMs,
    timed: maxElapsedMs !== Number.POSITIVE_INFINITY,
    maxRetryAfterMs: parsed.maxRetryAfterMs,
    costs: parsed.retryBudgetCosts,
    store,
    refund: store === undefined ? 0 : parsed.retryBudgetCosts.success,
    onRetry,
    onGiveUp,
    hookTimeoutMs,
    capMs: backoff.capMs ?? Number.POSITIVE_INFINITY,
  }
}

/**
 * Repeats a failed tool call when the error says it is transient and repeating is safe: `retryable` errors only,
 * and for a `write` tool only `safeToRepeat` ones. Waits with full-jitter backoff by default (`retryAfterMs` is a floor),
 * abortably on the run's signal; never more than 6 calls in all (past that the run ends with `recovery_exhausted`);
 * a token bucket stops retry storms. When it gives up, the last error goes back to the model (with a hint that does not invite the repeat when every attempt failed alike).
 * Takes the plain-data policy, or a backoff object alone.
 *
 * @example
 * createStack({ middleware: [retry({ maxAttempts: 4, perCode: { rate_limited: { maxAttempts: 5 } } }), timeout({ ms: 5000 })], tools })
 * createStack({ middleware: [retry(decorrelatedJitter({ baseMs: 100, capMs: 2000 }))], tools })
 */
export function retry(options?: RetryOptions | Backoff): Middleware {
  const settings = retrySettings(parseRetryOptions(isBackoff(options) ? { backoff: options } : options))
  const { timed } = settings
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
      () => retrySucceeded(settings, ctx),
      (err: unknown) => retryAfter(settings, ctx, next, source instanceof AbortSignal ? source : source.signal, started, err),
    )
  }
  // Keeps the onion's contract by construction (docs/decisions/270-compose-fast-path.md): compose calls it without the misuse bookkeeping.
  trustedMiddleware(middleware)
  return middleware
}
