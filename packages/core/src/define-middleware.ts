import type { z } from 'zod'
import { isLayer, type Layer, modelSideOf, toolSideOf } from './layer.js'
import type { ModelMiddleware } from './model-context.js'
import { parseOptions } from './options.js'
import type { Middleware } from './types.js'

/**
 * What a host hands to `create` besides the options: shared stores, named policies, the config
 * file's folder. Open for extension by declaration merging.
 */
export interface MiddlewareEnv {
  readonly [key: string]: unknown
}

/**
 * A middleware that can be named in a config file: its name, its options schema and its factories,
 * one for tool calls (`create`), one for model calls (`createModel`), or both, from the same options.
 */
export interface MiddlewareDefinition<Schema extends z.ZodType = z.ZodType> {
  readonly kind: 'shallot.middleware'
  readonly name: string
  readonly description: string
  readonly options: Schema
  /** Which calls it wraps. */
  readonly handles: { readonly tools: boolean; readonly models: boolean }
  /** The layer (or, for tool calls only, a middleware function); for a definition of model calls only, it throws a TypeError saying so. */
  readonly create: (options: z.output<Schema>, env: MiddlewareEnv) => Middleware | Layer
  readonly createModel: ((options: z.output<Schema>, env: MiddlewareEnv) => ModelMiddleware) | undefined
  /** Validates raw options with the schema (an `OptionsError` naming the option on failure), then creates the tool-call layer. */
  build(options: unknown, env?: MiddlewareEnv): Middleware
  /** The same for the model-call layer; a TypeError for a definition that wraps tool calls only. */
  buildModel(options: unknown, env?: MiddlewareEnv): ModelMiddleware
}

const NAME = /^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/

/**
 * Declares a middleware so hosts (the config file, the registry) can build it by name with
 * validated options. Built-in middlewares export their definitions this way too. One definition
 * may wrap tool calls (`create`), model calls (`createModel`) or both, with one options schema.
 *
 * @example
 * export default defineMiddleware({
 *   name: '@acme/shallot-rate-limit',
 *   options: z.object({ rps: z.number().positive() }),
 *   handles: { tools: true, models: true },
 *   create: ({ rps }) => rateLimit({ rps }), // a Layer: wrapToolCall and wrapModelCall
 * })
 */
export function defineMiddleware<Schema extends z.ZodType>(spec: {
  name: string
  description?: string
  options: Schema
  /** The layer from checked options: a `Layer` (tool calls, model calls or both), or a tool middleware function. */
  create?: (options: z.output<Schema>, env: MiddlewareEnv) => Middleware | Layer
  createModel?: (options: z.output<Schema>, env: MiddlewareEnv) => ModelMiddleware
  /** Which calls the layers `create` returns wrap. Default: tool calls, and model calls when `createModel` is given. */
  handles?: { tools: boolean; models: boolean }
}): MiddlewareDefinition<Schema> {
  if (typeof spec?.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineMiddleware(): name must be a package-style name like "retry" or "@acme/rate-limit", got ${JSON.stringify(spec?.name)}`,
    )
  }
  if (typeof (spec.options as { safeParse?: unknown })?.safeParse !== 'function') {
    throw new TypeError(`defineMiddleware("${spec.name}"): options must be a zod schema`)
  }
  const name = spec.name
  if (spec.create !== undefined && typeof spec.create !== 'function')
    throw new TypeError(`defineMiddleware("${name}"): create must be a function (options, env) => middleware`)
  if (spec.createModel !== undefined && typeof spec.createModel !== 'function')
    throw new TypeError(`defineMiddleware("${name}"): createModel must be a function (options, env) => model middleware`)
  if (spec.create === undefined && spec.createModel === undefined)
    throw new TypeError(`defineMiddleware("${name}"): give create (tool calls), createModel (model calls), or both`)
  const { createModel } = spec
  const create =
    spec.create ??
    (() => {
      throw new TypeError(`middleware "${name}" wraps model calls only: list it in the model stack (modelMiddleware), not the tool stack`)
    })
  const definition: MiddlewareDefinition<Schema> = {
    kind: 'shallot.middleware',
    name,
    description: spec.description ?? '',
    options: spec.options,
    handles: Object.freeze(spec.handles ?? { tools: spec.create !== undefined, models: createModel !== undefined }),
    create,
    createModel,
    build(options, env = {}) {
      return toolSideOf(layerOf(name, 'create', create(parseOptions(name, spec.options, options), env)), `middleware "${name}"`)
    },
    buildModel(options, env = {}) {
      if (createModel !== undefined)
        return layerOf(name, 'createModel', createModel(parseOptions(name, spec.options, options), env)) as ModelMiddleware
      if (spec.create === undefined || !definition.handles.models)
        throw new TypeError(`middleware "${name}" wraps tool calls only: list it in the tool stack (middleware), not the model stack`)
      return modelSideOf(layerOf(name, 'create', create(parseOptions(name, spec.options, options), env)), `middleware "${name}"`)
    },
  }
  return Object.freeze(definition)
}

function layerOf(name: string, factory: string, layer: unknown): Middleware | Layer | ModelMiddleware {
  if (typeof layer !== 'function' && !isLayer(layer))
    throw new TypeError(
      `middleware "${name}": ${factory}() returned ${layer === null ? 'null' : typeof layer}, not a layer or a middleware function`,
    )
  return layer as Middleware | Layer
}

/** True for a value made by {@link defineMiddleware}, from any installed copy of core. */
export function isMiddlewareDefinition(value: unknown): value is MiddlewareDefinition {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'shallot.middleware'
}
