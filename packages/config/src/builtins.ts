import { builtinDefinitions } from '@shallot/builtins'
import { contextEditingDefinition } from '@shallot/context-editing'
import type { MiddlewareDefinition } from '@shallot/core'
import './config-stores.js'

/**
 * The built-in middlewares a config file names without installing anything, outermost first:
 * `panic-catcher`, `redact`, `stuck-loop`, `fallback`, `idempotency`, `bulkhead`, `rate-limit`, `circuit-breaker`, `retry`,
 * `coalesce`, `error-classifier`, `timeout`, `hedging`. Each is its package's own definition; its options are what
 * a file can hold, and stores come from `env.stores`.
 *
 * @example
 * builtinMiddleware.find((d) => d.name === 'retry')?.build({ maxAttempts: 4 })
 */
export const builtinMiddleware: readonly MiddlewareDefinition[] = builtinDefinitions

/**
 * The built-ins that wrap model calls only, named under `modelMiddleware:` without installing anything:
 * `context-editing`. Not in {@link builtinMiddleware}, whose every entry also builds a tool layer.
 *
 * @example
 * builtinModelMiddleware.find((d) => d.name === 'context-editing')?.buildModel({ keep: 3 })
 */
export const builtinModelMiddleware: readonly MiddlewareDefinition[] = Object.freeze([contextEditingDefinition])
