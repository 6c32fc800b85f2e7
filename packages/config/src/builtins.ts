import { builtinDefinitions } from '@shallot/builtins'
import type { MiddlewareDefinition } from '@shallot/core'
import './config-stores.js'

/**
 * The built-in middlewares a config file names without installing anything, outermost first:
 * `panic-catcher`, `stuck-loop`, `fallback`, `idempotency`, `bulkhead`, `circuit-breaker`, `retry`,
 * `error-classifier`, `timeout`, `hedging`. Each is its package's own definition; its options are what
 * a file can hold, and stores come from `env.stores`.
 *
 * @example
 * builtinMiddleware.find((d) => d.name === 'retry')?.build({ maxAttempts: 4 })
 */
export const builtinMiddleware: readonly MiddlewareDefinition[] = builtinDefinitions
