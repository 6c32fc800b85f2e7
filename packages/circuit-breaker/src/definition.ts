import { defineMiddleware, type MiddlewareEnv } from '@shallot/core'
import { z } from 'zod'
import type { BreakerStore } from './breaker-store.js'
import { circuitBreaker } from './circuit-breaker.js'
import { checkHalfOpen, circuitBreakerOptionsSchema, lifetimeOf } from './circuit-breaker-options.js'
import { consecutive, consecutiveOptionsSchema } from './consecutive.js'
import { sampling, samplingOptionsSchema } from './sampling.js'

const { cooldownMs, cooldownGrowth, maxCooldownMs, halfOpenProbes, halfOpenSuccesses, maxHalfOpenMs, lifetime, scope, maxKeys } =
  circuitBreakerOptionsSchema.shape

const policySchema = z
  .strictObject({ consecutive: consecutiveOptionsSchema.optional(), sampling: samplingOptionsSchema.optional() })
  .refine((policy) => (policy.consecutive === undefined) !== (policy.sampling === undefined), {
    message: 'give exactly one of consecutive: { threshold } or sampling: { failureRatio, minimumThroughput, windowMs }',
  })

/**
 * The circuit breaker as a config file writes it: its failure policy as data
 * (`{ consecutive: { threshold: 5 } }`); functions (`key`, `isFailure`, `onStateChange`) cannot be
 * written in a file, and the store comes from the host (`env.stores.breaker`).
 *
 * @example
 * circuitBreakerFileOptionsSchema.parse({ policy: { sampling: { failureRatio: 0.5 } }, cooldownMs: 10_000 })
 */
export const circuitBreakerFileOptionsSchema = z
  .strictObject({
    cooldownMs,
    cooldownGrowth,
    maxCooldownMs,
    halfOpenProbes,
    halfOpenSuccesses,
    maxHalfOpenMs,
    lifetime,
    /** @deprecated The old name of `lifetime`; goes in the next minor version. */
    scope,
    maxKeys,
    policy: policySchema.optional(),
  })
  .refine((o) => o.lifetime === undefined || o.scope === undefined || o.lifetime === o.scope, {
    path: ['scope'],
    message: 'is the deprecated name of lifetime, and says otherwise; keep only lifetime',
  })
  .superRefine(checkHalfOpen)

/** The file's options as the breaker takes them: the policy built from its data, the host's shared store. */
function fromFile({ policy, ...options }: z.output<typeof circuitBreakerFileOptionsSchema>, env: MiddlewareEnv) {
  const store = lifetimeOf(options) === 'run' ? undefined : (env.stores as { breaker?: BreakerStore } | undefined)?.breaker
  const failurePolicy = policy?.sampling !== undefined ? sampling(policy.sampling) : consecutive(policy?.consecutive)
  return store === undefined ? { ...options, policy: failurePolicy } : { ...options, policy: failurePolicy, store }
}

/**
 * `circuitBreaker` as a middleware definition, for config files and registries: one layer, whose tool
 * side serves `stack:` and whose model side serves `modelMiddleware:`. A host that
 * shares breaker state (across reconfigurations, or a fleet) passes it as `env.stores.breaker`;
 * a run-scoped breaker ignores it, its state lives in the run.
 *
 * @example
 * const layer = circuitBreakerDefinition.build({ policy: { consecutive: { threshold: 3 } }, cooldownMs: 10_000 })
 * const modelLayer = circuitBreakerDefinition.buildModel({ cooldownMs: 10_000 })
 */
export const circuitBreakerDefinition = defineMiddleware({
  name: 'circuit-breaker',
  description:
    'Per-tool and per-model breaker: after repeated failures, refuses a tool softly (or a model fast) with circuit_open until a probe succeeds.',
  options: circuitBreakerFileOptionsSchema,
  handles: { tools: true, models: true },
  create: (options, env) => circuitBreaker(fromFile(options, env)),
})
