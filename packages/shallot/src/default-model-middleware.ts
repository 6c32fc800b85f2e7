import { type CircuitBreakerOptions, circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type ModelContext, type ModelMiddleware, parseOptions, type ToolContext, ToolError } from '@shallot/core'
import { isTransientModelError } from '@shallot/core/kit'
import { type ErrorClassifierOptions, errorClassifier } from '@shallot/error-classifier'
import { type RetryOptions, retry } from '@shallot/retry'
import { type TimeoutOptions, timeout } from '@shallot/timeout'
import { z } from 'zod'

/** Options for each layer of the default model stack, by name; `false` leaves a layer out. */
export interface DefaultModelMiddlewareOptions {
  readonly circuitBreaker?: CircuitBreakerOptions | false
  readonly retry?: RetryOptions | false
  readonly errorClassifier?: ErrorClassifierOptions | false
  readonly timeout?: TimeoutOptions | false
}

/** The layers of the default model stack, outermost first (docs/onion.md, "Both onions"). */
export const DEFAULT_MODEL_ORDER = Object.freeze(['circuitBreaker', 'retry', 'errorClassifier', 'timeout'] as const)

// Each layer checks its own options; here only the names and "options or false", so `timeOut` is an error.
const entry = z
  .custom<object | false>((v) => v === false || (typeof v === 'object' && v !== null && !Array.isArray(v)), {
    message: "expected the layer's options object, or false to leave it out",
  })
  .optional()
const schema = z.strictObject({ circuitBreaker: entry, retry: entry, errorClassifier: entry, timeout: entry })

/**
 * How long the default model stack rides out a provider's outage: two minutes. Long enough for a minute-boundary
 * rate limit (a `Retry-After` of up to 60 s, the longest a model call waits for one) and the request after it, and
 * for the tens of seconds of 503s a provider's incident usually lasts; short enough that a provider down for longer
 * is reported (or the run parked) instead of held by a process that may be serving a user. With a spare model
 * listed in front (`fallback({ models })`), give it what you would wait before switching:
 * `defaultModelMiddleware({ retry: { outageBudgetMs: 15_000 } })`.
 */
const MODEL_OUTAGE_BUDGET_MS = 120_000

/**
 * Pushback: the provider answered and said when to come back (a 429, or any failure with a `Retry-After`). Retry
 * waits it out; the breaker does not count it, since a provider that meters a busy minute is not a sick one, and
 * an open circuit would end the run (or move to a spare) while retry was waiting as asked.
 */
function isPushback(error: unknown): boolean {
  if (ToolError.is(error)) return error.code === 'rate_limited' || error.retryAfterMs !== undefined
  const status = (error as { status?: unknown } | null)?.status
  return status === 429
}

/** The model breaker's count: transient failures, except pushback. */
const indictsModel = (error: unknown, _ctx: ToolContext | ModelContext): boolean => isTransientModelError(error) && !isPushback(error)

/**
 * The model calls' counterpart of `defaultMiddleware()`: a breaker per model, retry of transient failures
 * (Retry-After as a floor) that rides out an outage of up to two minutes, the
 * provider's failure classified once, and a deadline per attempt. The figures: equal-jitter waits whose ceiling
 * starts at 250 ms and doubles to 16 s, so a two-minute outage costs at most 21 requests (each a step of the run)
 * however the draws fall (what will not heal — refused credentials, a used-up quota, a request too long for the
 * window, a certificate that fails — is never repeated: the classifier ends the run); a circuit open after 3
 * failures for 30 s, pushback (429, `Retry-After`) not counted; 60 s per attempt. With a spare model listed in
 * front (`fallback({ models })`) attempts bound each model's call but the last's: the spare is asked, not waited
 * for. `retry: { maxAttempts }` without `outageBudgetMs` bounds the call by those attempts (full jitter, as a
 * bounded retry had) instead of the outage budget. Every call builds fresh layers (fresh breaker and budget state).
 *
 * @example
 * const agent = createAgent({ model, tools, modelMiddleware: defaultModelMiddleware({ timeout: { ms: 20_000 } }) })
 */
export function defaultModelMiddleware(options: DefaultModelMiddlewareOptions = {}): ModelMiddleware[] {
  parseOptions('defaultModelMiddleware()', schema, options)
  const layers: ModelMiddleware[] = []
  if (options.circuitBreaker !== false) {
    const breaking = { policy: consecutive({ threshold: 3 }), cooldownMs: 30_000, isFailure: indictsModel, ...options.circuitBreaker }
    layers.push(circuitBreaker(breaking).wrapModelCall)
  }
  if (options.retry !== false) {
    const given = options.retry ?? {}
    // Attempts given and no budget: attempts bound the call, as asked; the outage is ridden out when nobody chose.
    // Riding it out, equal jitter keeps half of each ceiling as a floor, so the budget bounds the requests too.
    const riding =
      'maxAttempts' in given && !('outageBudgetMs' in given)
        ? { backoff: 'full-jitter' as const }
        : { backoff: 'equal-jitter' as const, outageBudgetMs: MODEL_OUTAGE_BUDGET_MS }
    const retrying = {
      maxAttempts: 3,
      baseMs: 250,
      capMs: 16_000,
      ...riding,
      // A provider in an outage still answers (429, 503, 529); a connection that fails is most often a wrong URL or a
      // server not started, which no wait mends: 3 attempts cover a network blip.
      perCode: { network_error: { maxAttempts: 3 } },
      ...given,
    }
    layers.push(retry(retrying).wrapModelCall)
  }
  // The classifier passes a server's Retry-After on unclamped (up to its one-day ceiling), so retry's own
  // maxRetryAfterMs decides: a 600 s pushback ends the call at once instead of being read as 60 s and waited.
  if (options.errorClassifier !== false)
    layers.push(errorClassifier({ maxRetryAfterMs: 24 * 3600 * 1000, ...(options.errorClassifier || {}) }).wrapModelCall)
  if (options.timeout !== false) layers.push(timeout({ ms: 60_000, ...options.timeout }).wrapModelCall)
  return layers
}
