import { type Layer, type Middleware, type ModelMiddleware, parseOptions } from '@shallot/core'
import { type FallbackOptions, fallbackOptionsSchema, sidesOf } from './fallback-options.js'
import { modelFallback } from './model-fallback.js'
import { toolFallback } from './tool-fallback.js'

/**
 * What {@link fallback} returns: a tool side (`wrapToolCall`) when the options give tool sources or no
 * spare models, a model side (`wrapModelCall`) when they give `models`. A side the options do not make
 * is absent, and listing the layer where only that side would serve is a TypeError from the host.
 */
export interface FallbackLayer extends Layer {
  readonly name: 'fallback'
  readonly wrapToolCall?: Middleware
  readonly wrapModelCall?: ModelMiddleware
}

type WithModels = { readonly models: NonNullable<FallbackOptions['models']> }
type WithToolSources =
  | { readonly tools: NonNullable<FallbackOptions['tools']> }
  | { readonly default: NonNullable<FallbackOptions['default']> }

/**
 * Fallback for tool calls and model calls, from one set of options; each side is made only when the
 * options ask for it.
 *
 * Tool calls (`tools`, `default` and the settings marked "tool calls only"): when a `read` or
 * `idempotent` call fails in a way that says the tool is down (its circuit is open, it timed out past
 * retry, it is overloaded: the codes in `on`), answers from a fallback instead: the last good result
 * of the same call (`from: 'cache'`, with its age), another tool (`from: 'tool'`, through the stack's
 * `dispatch`), or a fixed value. The model reads the answer as a success, with a short note saying where
 * it came from: `{ "note": "cached 4 min ago", "value": { ... } }` (a value that is JSON text goes as JSON). A `write` never
 * falls back and is never cached. Put it outside the circuit breaker and retry, so it sees what they
 * finally say.
 *
 * Model calls (`models`, `resolveModel`): when the agent's model is down (a transient failure, or an
 * open circuit inside), the spare models are asked in order; when every one failed the run ends as
 * `fallback_exhausted`. Place it outermost in `modelMiddleware`.
 *
 * @example
 * let stack: Stack
 * const layer = fallback({
 *   tools: { status_page: [{ from: 'cache' }, { from: 'tool', tool: 'status_mirror' }], weather: { from: 'value', value: 'unknown' } },
 *   dispatch: (call, options) => stack.dispatch(call, options),
 *   models: [claude],
 * })
 * const agent = createAgent({ model: gpt, tools, middleware: [layer, circuitBreaker(), retry()], modelMiddleware: [layer, circuitBreaker()] })
 */
export function fallback(
  options: FallbackOptions & WithModels & WithToolSources,
): FallbackLayer & { readonly wrapToolCall: Middleware; readonly wrapModelCall: ModelMiddleware }
export function fallback(options: FallbackOptions & WithModels): FallbackLayer & { readonly wrapModelCall: ModelMiddleware }
export function fallback(options?: FallbackOptions & { readonly models?: undefined }): FallbackLayer & { readonly wrapToolCall: Middleware }
export function fallback(options?: FallbackOptions): FallbackLayer
export function fallback(options?: FallbackOptions): FallbackLayer {
  const o = parseOptions('fallback()', fallbackOptionsSchema, options)
  const sides = sidesOf(o)
  return Object.freeze({
    name: 'fallback',
    ...(sides.tools ? { wrapToolCall: toolFallback(o) } : {}),
    ...(o.models === undefined ? {} : { wrapModelCall: modelFallback(o.models, o.resolveModel) }),
  })
}
