import { type CircuitBreakerOptions, circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type ModelMiddleware, parseOptions } from '@shallot/core'
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
 * The model calls' counterpart of `defaultMiddleware()`: a breaker per model, retry of transient failures
 * (full jitter, Retry-After as a floor), the provider's failure classified once, and a deadline per attempt —
 * with the figures core's own model path uses (3 attempts from 250 ms to 4 s, a circuit open after 3 failures
 * for 30 s, 60 s per attempt), so `createAgent({ modelMiddleware: defaultModelMiddleware() })` behaves as
 * today's agent does, through layers a config file and a third party can reach.
 * Every call builds fresh layers (fresh breaker and budget state).
 *
 * @example
 * const agent = createAgent({ model, tools, modelMiddleware: defaultModelMiddleware({ timeout: { ms: 20_000 } }) })
 */
export function defaultModelMiddleware(options: DefaultModelMiddlewareOptions = {}): ModelMiddleware[] {
  parseOptions('defaultModelMiddleware()', schema, options)
  const layers: ModelMiddleware[] = []
  if (options.circuitBreaker !== false)
    layers.push(circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 30_000, ...options.circuitBreaker }).wrapModelCall)
  if (options.retry !== false) layers.push(retry({ maxAttempts: 3, baseMs: 250, capMs: 4000, ...options.retry }).wrapModelCall)
  // The classifier passes a server's Retry-After on unclamped (up to its one-day ceiling), so retry's own
  // maxRetryAfterMs decides: a 600 s pushback ends the call at once instead of being read as 60 s and waited.
  if (options.errorClassifier !== false)
    layers.push(errorClassifier({ maxRetryAfterMs: 24 * 3600 * 1000, ...(options.errorClassifier || {}) }).wrapModelCall)
  if (options.timeout !== false) layers.push(timeout({ ms: 60_000, ...options.timeout }).wrapModelCall)
  return layers
}
