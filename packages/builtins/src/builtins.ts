import { bulkhead, bulkheadDefinition } from '@shallot/bulkhead'
import { circuitBreaker, circuitBreakerDefinition } from '@shallot/circuit-breaker'
import { coalesce, coalesceDefinition } from '@shallot/coalesce'
import type { Layer, Middleware, MiddlewareDefinition } from '@shallot/core'
import { errorClassifier, errorClassifierDefinition } from '@shallot/error-classifier'
import { fallback, fallbackDefinition } from '@shallot/fallback'
import { hedging, hedgingDefinition } from '@shallot/hedging'
import { idempotency, idempotencyDefinition } from '@shallot/idempotency'
import { panicCatcher, panicCatcherDefinition } from '@shallot/panic-catcher'
import { rateLimit, rateLimitDefinition } from '@shallot/rate-limit'
import { redact, redactDefinition } from '@shallot/redact'
import { retry, retryDefinition } from '@shallot/retry'
import { stuckLoop, stuckLoopDefinition } from '@shallot/stuck-loop'
import { timeout, timeoutDefinition } from '@shallot/timeout'

/** One entry: the definition a config file names, the factory `defaultMiddleware()` calls, and whether the default stack has it. */
const builtin = <const Option extends string, Options, const InDefault extends boolean>(entry: {
  option: Option
  definition: MiddlewareDefinition
  create: (options?: Options) => Middleware | Layer
  inDefaultStack: InDefault
}) => Object.freeze(entry)

/**
 * Every built-in layer, outermost first: the order in which the ones a stack uses should stand. The seven with
 * `inDefaultStack` are `defaultMiddleware()`; redact, fallback, bulkhead, rate-limit, coalesce and hedging are available by name only.
 *
 * @example
 * builtins.filter((b) => b.inDefaultStack).map((b) => b.definition.name)
 * // ['panic-catcher', 'stuck-loop', 'idempotency', 'circuit-breaker', 'retry', 'error-classifier', 'timeout']
 */
export const builtins = Object.freeze([
  builtin({ option: 'panicCatcher', definition: panicCatcherDefinition, create: panicCatcher, inDefaultStack: true }),
  builtin({ option: 'redact', definition: redactDefinition, create: redact, inDefaultStack: false }),
  builtin({ option: 'stuckLoop', definition: stuckLoopDefinition, create: stuckLoop, inDefaultStack: true }),
  builtin({ option: 'fallback', definition: fallbackDefinition, create: fallback, inDefaultStack: false }),
  builtin({ option: 'idempotency', definition: idempotencyDefinition, create: idempotency, inDefaultStack: true }),
  builtin({ option: 'bulkhead', definition: bulkheadDefinition, create: bulkhead, inDefaultStack: false }),
  builtin({ option: 'rateLimit', definition: rateLimitDefinition, create: rateLimit, inDefaultStack: false }),
  builtin({ option: 'circuitBreaker', definition: circuitBreakerDefinition, create: circuitBreaker, inDefaultStack: true }),
  builtin({ option: 'retry', definition: retryDefinition, create: retry, inDefaultStack: true }),
  builtin({ option: 'coalesce', definition: coalesceDefinition, create: coalesce, inDefaultStack: false }),
  builtin({ option: 'errorClassifier', definition: errorClassifierDefinition, create: errorClassifier, inDefaultStack: true }),
  builtin({ option: 'timeout', definition: timeoutDefinition, create: timeout, inDefaultStack: true }),
  builtin({ option: 'hedging', definition: hedgingDefinition, create: hedging, inDefaultStack: false }),
] as const)

/** A built-in layer of the default stack. */
export type DefaultBuiltin = Extract<(typeof builtins)[number], { inDefaultStack: true }>

/**
 * The built-in layers' definitions, outermost first, as a config file names them.
 *
 * @example
 * builtinDefinitions.find((d) => d.name === 'retry')?.build({ maxAttempts: 4 })
 */
export const builtinDefinitions: readonly MiddlewareDefinition[] = Object.freeze(builtins.map((b) => b.definition))

/**
 * The definition names of the default stack, outermost first.
 *
 * @example
 * DEFAULT_STACK // ['panic-catcher', 'stuck-loop', 'idempotency', 'circuit-breaker', 'retry', 'error-classifier', 'timeout']
 */
export const DEFAULT_STACK: readonly string[] = Object.freeze(builtins.filter((b) => b.inDefaultStack).map((b) => b.definition.name))
