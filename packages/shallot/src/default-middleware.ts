import { type CircuitBreakerOptions, circuitBreaker } from '@shallot/circuit-breaker'
import { type Middleware, parseOptions } from '@shallot/core'
import { type ErrorClassifierOptions, errorClassifier } from '@shallot/error-classifier'
import { type IdempotencyOptions, idempotency } from '@shallot/idempotency'
import { type PanicCatcherOptions, panicCatcher } from '@shallot/panic-catcher'
import { type RetryOptions, retry } from '@shallot/retry'
import { type StuckLoopOptions, stuckLoop } from '@shallot/stuck-loop'
import { type TimeoutOptions, timeout } from '@shallot/timeout'
import { z } from 'zod'

/** Options for each of the seven layers; `false` leaves a layer out. */
export interface DefaultMiddlewareOptions {
  panicCatcher?: PanicCatcherOptions | false
  stuckLoop?: StuckLoopOptions | false
  idempotency?: IdempotencyOptions | false
  circuitBreaker?: CircuitBreakerOptions | false
  retry?: RetryOptions | false
  errorClassifier?: ErrorClassifierOptions | false
  timeout?: TimeoutOptions | false
}

/** The names of the layers, outermost first: the recommended order (see docs/onion.md for why). */
export const DEFAULT_ORDER = [
  'panicCatcher',
  'stuckLoop',
  'idempotency',
  'circuitBreaker',
  'retry',
  'errorClassifier',
  'timeout',
] as const satisfies ReadonlyArray<keyof DefaultMiddlewareOptions>

const factories: {
  [K in keyof DefaultMiddlewareOptions]-?: (options: Exclude<DefaultMiddlewareOptions[K], false> | undefined) => Middleware
} = {
  panicCatcher,
  stuckLoop,
  idempotency,
  circuitBreaker,
  retry,
  errorClassifier,
  timeout,
}

// Each layer validates its own options; here only the layer names and "options or false" are checked, so a
// misspelt layer (`timeOut`) is an error with a suggestion instead of a layer silently left at its defaults.
const layerEntry = z
  .custom<object | false>((v) => v === false || (typeof v === 'object' && v !== null && !Array.isArray(v)), {
    message: "expected the layer's options object, or false to leave it out",
  })
  .optional()
const defaultMiddlewareOptionsSchema = z
  .object(Object.fromEntries(DEFAULT_ORDER.map((name) => [name, layerEntry])) as Record<(typeof DEFAULT_ORDER)[number], typeof layerEntry>)
  .strict()

/**
 * The seven layers in the recommended order, each with its defaults unless you pass options.
 * Every call of this function builds fresh layers (fresh breaker, idempotency and budget state).
 *
 * @example
 * const stack = createStack({ middleware: defaultMiddleware({ timeout: { ms: 10_000 } }), tools })
 */
export function defaultMiddleware(options: DefaultMiddlewareOptions = {}): Middleware[] {
  parseOptions('defaultMiddleware()', defaultMiddlewareOptionsSchema, options)
  const layers: Middleware[] = []
  for (const name of DEFAULT_ORDER) {
    const layerOptions = options[name]
    if (layerOptions === false) continue
    const create = factories[name] as (o: unknown) => Middleware
    layers.push(create(layerOptions))
  }
  return layers
}
