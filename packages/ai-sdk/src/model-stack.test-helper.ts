import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import type { ModelAdapter } from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { fallback } from '@shallot/fallback'
import { retry } from '@shallot/retry'
import { timeout } from '@shallot/timeout'

/**
 * `shallot`'s `defaultModelMiddleware()`, layer for layer and figure for figure (this package feeds the umbrella, so
 * its tests cannot import it): a breaker per model, retry, the classifier and a deadline per attempt. `spares` puts
 * `fallback({ models: spares })` outermost, as a user lists it in front of the default stack.
 */
export function defaultModelMiddleware(
  options: { retry?: { baseMs?: number; capMs?: number }; timeoutMs?: number; spares?: ModelAdapter[] } = {},
) {
  return [
    ...(options.spares === undefined ? [] : [fallback({ models: options.spares })]),
    circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 30_000 }),
    retry({ maxAttempts: 3, baseMs: 250, capMs: 4000, ...options.retry }),
    errorClassifier({ maxRetryAfterMs: 24 * 3600 * 1000 }),
    timeout({ ms: options.timeoutMs ?? 60_000 }),
  ]
}
