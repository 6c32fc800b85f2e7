import { bulkhead, bulkheadDefinition } from '@shallot/bulkhead'
import { circuitBreaker, circuitBreakerDefinition } from '@shallot/circuit-breaker'
import { coalesce, coalesceDefinition } from '@shallot/coalesce'
import { contextEditing, contextEditingDefinition } from '@shallot/context-editing'
import type { LayerEntry, Middleware, MiddlewareDefinition } from '@shallot/core'
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
import './config-stores.js'

/** One entry: the definition a config file names, the factory `defaultMiddleware()` calls, and whether the default stack has it. */
const builtin = <const Option extends string, Options, Made extends LayerEntry<Middleware>, const InDefault extends boolean>(entry: {
  option: Option
  definition: MiddlewareDefinition
  create: (options?: Options) => Made
  inDefaultStack: InDefault
}) => Object.freeze(entry)

/**
 * Every built-in layer, outermost first: the order in which the ones a stack uses should stand (docs/onion.md).
 * The seven with `inDefaultStack` are `defaultMiddleware()` from `shallot`; the others a config file names without
 * installing anything. context-editing wraps model calls only, outermost on that onion.
 *
 * @example
 * builtins.filter((b) => b.inDefaultStack).map((b) => b.definition.name)
 * // ['panic-catcher', 'stuck-loop', 'idempotency', 'circuit-breaker', 'retry', 'error-classifier', 'timeout']
 */
export const builtins = Object.freeze([
  builtin({ option: 'contextEditing', definition: contextEditingDefinition, create: contextEditing, inDefaultStack: false }),
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

/** A built-in layer of the default stack: `defaultMiddleware()` types its options by these entries. */
export type DefaultBuiltin = Extract<(typeof builtins)[number], { inDefaultStack: true }>

/**
 * The built-ins that wrap tool calls, outermost first, as a config file names them under `stack:`:
 * `panic-catcher`, `redact`, `stuck-loop`, `fallback`, `idempotency`, `bulkhead`, `rate-limit`, `circuit-breaker`, `retry`,
 * `coalesce`, `error-classifier`, `timeout`, `hedging`. Each is its package's own definition; its options are what
 * a file can hold, and stores come from `env.stores`.
 *
 * @example
 * builtinMiddleware.find((d) => d.name === 'retry')?.build({ maxAttempts: 4 })
 */
export const builtinMiddleware: readonly MiddlewareDefinition[] = Object.freeze(
  builtins.map((b) => b.definition).filter((d) => d.handles.tools),
)

/**
 * Every built-in's definition, the tool-call ones and the model-only ones (`context-editing`): what a config file
 * names without installing anything, in either list.
 */
export const builtinDefinitions: readonly MiddlewareDefinition[] = Object.freeze(builtins.map((b) => b.definition))
