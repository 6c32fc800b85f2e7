import type { Layer, Middleware, ModelMiddleware } from '@shallot/core'
import { type CircuitBreakerOptions, parseCircuitBreakerOptions } from './circuit-breaker-options.js'
import { modelBreaker } from './model-breaker.js'
import { toolBreaker } from './tool-breaker.js'

/** What {@link circuitBreaker} returns: one layer with a side for tool calls and a side for model calls. */
export interface CircuitBreakerLayer extends Layer {
  readonly name: 'circuit-breaker'
  /** Around tool calls (`middleware`): one breaker per tool (or `key`), soft `circuit_open` refusals, `UNAVAILABLE` in describeTool. */
  readonly wrapToolCall: Middleware
  /** Around model calls (`modelMiddleware`): one breaker per model per agent (or `key`, or store), fail-fast `circuit_open`. */
  readonly wrapModelCall: ModelMiddleware
}

/**
 * A circuit breaker for tool calls and model calls, from one set of options. After repeated
 * failures a tool's calls are refused with a soft `circuit_open` the model can route around, and a
 * model's calls fail fast with the same code (a fallback layer outside moves on to the next model);
 * after the cooldown one probe (or `halfOpenProbes`) tests it, and its success closes the circuit. No
 * timers: the move to half-open happens on the first call after the cooldown, by the injected
 * monotonic clock. Place it outside retry: it sees each call once, after its retries, and a failed
 * call counts once per request it made. List it in `middleware` for tool calls, in `modelMiddleware`
 * for model calls, or in both: each list takes its own side, and the two keep separate circuits.
 *
 * @example
 * const breaker = circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 })
 * const agent = createAgent({ model, tools, middleware: [breaker, retry()], modelMiddleware: [breaker, retry()] })
 */
export function circuitBreaker(options?: CircuitBreakerOptions): CircuitBreakerLayer {
  const o = parseCircuitBreakerOptions(options)
  return Object.freeze({ name: 'circuit-breaker', wrapToolCall: toolBreaker(o), wrapModelCall: modelBreaker(o) })
}
