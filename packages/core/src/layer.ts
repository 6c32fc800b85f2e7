import type { ModelMiddleware } from './model-context.js'
import type { Middleware } from './types.js'

/**
 * One concern's middleware, for tool calls, model calls or both: what a layer factory such as
 * `retry()` returns. A host takes `wrapToolCall` when the layer is listed among the tool layers
 * (`middleware`) and `wrapModelCall` when it is listed among the model layers (`modelMiddleware`), so
 * the same factory serves both lists, each with the options given where it is listed. A plain
 * function is a layer too: a tool middleware in the tool list, a model middleware in the model list.
 *
 * @example
 * const timing: Layer = {
 *   name: 'timing',
 *   async wrapToolCall(ctx, next) { const t = ctx.clock.now(); await next(); ctx.log.info({ ms: ctx.clock.now() - t }) },
 *   async wrapModelCall(ctx, next) { const t = ctx.clock.now(); await next(); ctx.log.info({ ms: ctx.clock.now() - t }) },
 * }
 */
export interface Layer {
  /** How errors, logs and config name it: the package-style name of its definition (`retry`, `@acme/audit`). */
  readonly name: string
  /** The layer around each tool call; absent for a layer of model calls only. */
  readonly wrapToolCall?: Middleware
  /** The layer around each model call; absent for a layer of tool calls only. */
  readonly wrapModelCall?: ModelMiddleware
}

/** What a list of tool layers or of model layers may hold: a layer object, or a plain middleware function. */
export type LayerEntry<Fn> = Fn | Layer

/** True for an object with a name and at least one of `wrapToolCall` / `wrapModelCall`. */
export function isLayer(value: unknown): value is Layer {
  if (typeof value !== 'object' || value === null) return false
  const { name, wrapToolCall, wrapModelCall } = value as Partial<Layer>
  return typeof name === 'string' && (typeof wrapToolCall === 'function' || typeof wrapModelCall === 'function')
}

const describe = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value)

/**
 * The tool side of an entry of a tool-layer list: a function as it is, a layer's `wrapToolCall`. A layer
 * of model calls only, or anything else, is a TypeError that names the entry and the fix.
 *
 * @example
 * toolSideOf(retry(), 'middleware[2]') // retry's wrapToolCall
 */
export function toolSideOf(entry: unknown, where: string): Middleware {
  if (typeof entry === 'function') return entry as Middleware
  if (isLayer(entry)) {
    if (entry.wrapToolCall !== undefined) return entry.wrapToolCall
    throw new TypeError(`${where}: layer "${entry.name}" wraps model calls only; list it with the model layers (modelMiddleware)`)
  }
  throw new TypeError(
    `${where}: must be a layer (e.g. retry()) or a middleware function (ctx, next) => Promise<void>, got ${describe(entry)}`,
  )
}

/**
 * The model side of an entry of a model-layer list: a function as it is, a layer's `wrapModelCall`. A
 * layer of tool calls only, or anything else, is a TypeError that names the entry and the fix.
 *
 * @example
 * modelSideOf(retry(), 'modelMiddleware[0]') // retry's wrapModelCall
 */
export function modelSideOf(entry: unknown, where: string): ModelMiddleware {
  if (typeof entry === 'function') return entry as ModelMiddleware
  if (isLayer(entry)) {
    if (entry.wrapModelCall !== undefined) return entry.wrapModelCall
    throw new TypeError(`${where}: layer "${entry.name}" wraps tool calls only; list it with the tool layers (middleware)`)
  }
  throw new TypeError(
    `${where}: must be a layer (e.g. retry()) or a model middleware function (ctx, next) => Promise<void>, got ${describe(entry)}`,
  )
}
