import {
  circuitBreaker,
  circuitBreakerOptionsSchema,
  consecutive,
  consecutiveOptionsSchema,
  sampling,
  samplingOptionsSchema,
} from '@shallot/circuit-breaker'
import { defineMiddleware, type MiddlewareDefinition } from '@shallot/core'
import { errorClassifier, errorClassifierOptionsSchema } from '@shallot/error-classifier'
import { idempotency, idempotencyOptionsSchema } from '@shallot/idempotency'
import { panicCatcher, panicCatcherOptionsSchema } from '@shallot/panic-catcher'
import { retry, retryPolicySchema } from '@shallot/retry'
import { stuckLoop, stuckLoopOptionsSchema } from '@shallot/stuck-loop'
import { timeout, timeoutOptionsSchema } from '@shallot/timeout'
import { z } from 'zod'
import './config-stores.js'

/** The fields of a zod object shape that a file can hold (functions and stores cannot be written in JSON). */
function pick<Shape extends z.ZodRawShape, Key extends keyof Shape & string>(shape: Shape, keys: readonly Key[]): Pick<Shape, Key> {
  const picked = {} as Pick<Shape, Key>
  // A field a middleware renamed drops out (the schema test then flags shallot.schema.json as stale) rather than crashing the import.
  for (const key of keys) if (shape[key] !== undefined) picked[key] = shape[key]
  return picked
}

const breakerPolicySchema = z
  .strictObject({ consecutive: consecutiveOptionsSchema.optional(), sampling: samplingOptionsSchema.optional() })
  .refine((policy) => (policy.consecutive === undefined) !== (policy.sampling === undefined), {
    message: 'give exactly one of consecutive: { threshold } or sampling: { failureRatio, minimumThroughput, windowMs }',
  })

/**
 * The circuit breaker as a file writes it: its failure policy as data (`{ consecutive: { threshold: 5 } }`).
 *
 * @example
 * circuitBreakerFileOptionsSchema.parse({ policy: { sampling: { failureRatio: 0.5 } }, cooldownMs: 10_000 })
 */
export const circuitBreakerFileOptionsSchema = z.strictObject({
  ...pick(circuitBreakerOptionsSchema.shape, [
    'cooldownMs',
    'cooldownGrowth',
    'maxCooldownMs',
    'halfOpenProbes',
    'maxHalfOpenMs',
    'scope',
    'maxKeys',
  ]),
  policy: breakerPolicySchema.optional(),
})

/**
 * Idempotency as a file writes it: `scope` is a string (a function cannot be written in a file).
 *
 * @example
 * idempotencyFileOptionsSchema.parse({ scope: 'tenant-42', ttlMs: 3_600_000 })
 */
export const idempotencyFileOptionsSchema = z.strictObject({
  ...pick(idempotencyOptionsSchema.shape, ['keyFrom', 'effects', 'ttlMs', 'leaseMs', 'waitMs', 'pollMs']),
  scope: z
    .string()
    .regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable ASCII characters without spaces')
    .optional(),
})

/**
 * The error classifier as a file writes it: everything but the `now` function.
 *
 * @example
 * errorClassifierFileOptionsSchema.parse({ rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable' } }] })
 */
export const errorClassifierFileOptionsSchema = z.strictObject(
  pick(errorClassifierOptionsSchema.shape, ['rules', 'builtins', 'maxLength', 'maxRetryAfterMs', 'secrets', 'sanitizeToolErrors']),
)

/**
 * The panic catcher as a file writes it: everything but the `redact` function.
 *
 * @example
 * panicCatcherFileOptionsSchema.parse({ maxMessageLength: 300, hint: false })
 */
export const panicCatcherFileOptionsSchema = z.strictObject(pick(panicCatcherOptionsSchema.shape, ['maxMessageLength', 'hint']))

const panicCatcherDefinition = defineMiddleware({
  name: 'panic-catcher',
  description: 'Turns anything thrown that is not a ToolError or LoopError into a soft tool_panic the model can read.',
  options: panicCatcherFileOptionsSchema,
  create: (options) => panicCatcher(options),
})

const stuckLoopDefinition = defineMiddleware({
  name: 'stuck-loop',
  description: 'Refuses a call that keeps failing the same way; ends the run with loop_detected past a threshold.',
  options: stuckLoopOptionsSchema,
  create: ({ successRepeatLimit, ...limits }) => stuckLoop(successRepeatLimit === undefined ? limits : { ...limits, successRepeatLimit }),
})

const idempotencyDefinition = defineMiddleware({
  name: 'idempotency',
  description: 'One key per logical call: completed results replay, concurrent duplicates wait or are refused.',
  options: idempotencyFileOptionsSchema,
  create: (options, env) => {
    const store = env.stores?.idempotency
    return idempotency(store === undefined ? options : { ...options, store })
  },
})

const circuitBreakerDefinition = defineMiddleware({
  name: 'circuit-breaker',
  description: 'Per-tool breaker: after repeated failures that indict a tool, refuses it softly with circuit_open until a probe succeeds.',
  options: circuitBreakerFileOptionsSchema,
  create: ({ policy, ...options }, env) => {
    const store = options.scope === 'run' ? undefined : env.stores?.breaker
    const failurePolicy = policy?.sampling !== undefined ? sampling(policy.sampling) : consecutive(policy?.consecutive)
    return circuitBreaker(store === undefined ? { ...options, policy: failurePolicy } : { ...options, policy: failurePolicy, store })
  },
})

const retryDefinition = defineMiddleware({
  name: 'retry',
  description: 'Repeats transient failures with backoff (full jitter by default), within a hard ceiling.',
  options: retryPolicySchema,
  create: (policy, env) => {
    const budget = env.stores?.retryBudget
    return retry(budget === undefined ? policy : { ...policy, retryBudget: budget })
  },
})

const errorClassifierDefinition = defineMiddleware({
  name: 'error-classifier',
  description: 'Turns foreign throws (HTTP statuses, errno codes, SDK errors) into redacted soft ToolErrors; rules are data.',
  options: errorClassifierFileOptionsSchema,
  create: (options) => errorClassifier(options),
})

const timeoutDefinition = defineMiddleware({
  name: 'timeout',
  description: 'Gives every attempt a deadline; a missed one is a soft, retryable timeout.',
  options: timeoutOptionsSchema,
  create: (options) => timeout(options),
})

/**
 * The built-in middlewares, in the recommended order (outermost first), as definitions a config file
 * names: `panic-catcher`, `stuck-loop`, `idempotency`, `circuit-breaker`, `retry`, `error-classifier`, `timeout`.
 * Their options are what a file can hold; stores come from `env.stores`.
 *
 * @example
 * builtinMiddleware.find((d) => d.name === 'retry')?.build({ maxAttempts: 4 })
 */
export const builtinMiddleware: readonly MiddlewareDefinition[] = Object.freeze([
  panicCatcherDefinition,
  stuckLoopDefinition,
  idempotencyDefinition,
  circuitBreakerDefinition,
  retryDefinition,
  errorClassifierDefinition,
  timeoutDefinition,
] as MiddlewareDefinition[])
