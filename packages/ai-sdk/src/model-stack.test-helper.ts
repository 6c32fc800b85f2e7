import { type Agent, type AgentModel, type AgentOptions, createAgent as createCoreAgent } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import type { ModelAdapter } from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { fallback } from '@shallot/fallback'
import { retry } from '@shallot/retry'
import { timeout } from '@shallot/timeout'

/**
 * `createAgent` with the default model stack, built as `shallot`'s `createAgent` builds it from `modelRetry`,
 * `modelBreaker`, `limits.modelTimeoutMs` and a chain `model: [a, b]` (this package feeds the umbrella, so its
 * tests cannot import it): the fallback layer and a breaker per model for a chain, then retry, the classifier
 * and the deadline, with the same figures. Core's own createAgent asks the model only through its onion
 * (decision 500, step 3).
 */
export function createAgent(options: AgentOptions<AgentModel>): Agent {
  const { modelRetry, modelBreaker, limits, model, ...rest } = options
  const { modelTimeoutMs, ...coreLimits } = limits ?? {}
  const chain: readonly ModelAdapter[] = Array.isArray(model) ? model : [model as ModelAdapter]
  const layers = [
    ...(chain.length > 1
      ? [
          fallback({ models: chain.slice(1) }),
          circuitBreaker({
            policy: consecutive({ threshold: modelBreaker?.threshold ?? 3 }),
            cooldownMs: modelBreaker?.cooldownMs ?? 30_000,
          }),
        ]
      : []),
    retry({ maxAttempts: 3, baseMs: 250, capMs: 4000, maxRetryAfterMs: 60_000, ...modelRetry }),
    errorClassifier({ maxRetryAfterMs: 24 * 3600 * 1000 }),
    timeout({ ms: modelTimeoutMs ?? 60_000 }),
  ]
  return createCoreAgent({ ...rest, limits: coreLimits, model: chain[0] as ModelAdapter, modelMiddleware: layers })
}
