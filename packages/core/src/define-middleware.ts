import type { z } from 'zod'
import { parseOptions } from './options.js'
import type { Middleware } from './types.js'

/**
 * What a host hands to `create` besides the options: shared stores, named policies, the config
 * file's folder. Open for extension by declaration merging.
 */
export interface MiddlewareEnv {
  readonly [key: string]: unknown
}

/** A middleware that can be named in a config file: its name, its options schema and its factory. */
export interface MiddlewareDefinition<Schema extends z.ZodType = z.ZodType> {
  readonly kind: 'shallot.middleware'
  readonly name: string
  readonly description: string
  readonly options: Schema
  readonly create: (options: z.output<Schema>, env: MiddlewareEnv) => Middleware
  /** Validates raw options with the schema (an `OptionsError` naming the option on failure), then creates the layer. */
  build(options: unknown, env?: MiddlewareEnv): Middleware
}

const NAME = /^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/

/**
 * Declares a middleware so hosts (the config file, the registry) can build it by name with
 * validated options. Built-in middlewares export their definitions this way too.
 *
 * @example
 * export default defineMiddleware({
 *   name: '@acme/shallot-rate-limit',
 *   options: z.object({ rps: z.number().positive() }),
 *   create: ({ rps }) => rateLimit({ rps }),
 * })
 */
export function defineMiddleware<Schema extends z.ZodType>(spec: {
  name: string
  description?: string
  options: Schema
  create: (options: z.output<Schema>, env: MiddlewareEnv) => Middleware
}): MiddlewareDefinition<Schema> {
  if (typeof spec?.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineMiddleware(): name must be a package-style name like "retry" or "@acme/rate-limit", got ${JSON.stringify(spec?.name)}`,
    )
  }
  if (typeof (spec.options as { safeParse?: unknown })?.safeParse !== 'function') {
    throw new TypeError(`defineMiddleware("${spec.name}"): options must be a zod schema`)
  }
  if (typeof spec.create !== 'function')
    throw new TypeError(`defineMiddleware("${spec.name}"): create must be a function (options, env) => middleware`)
  const definition: MiddlewareDefinition<Schema> = {
    kind: 'shallot.middleware',
    name: spec.name,
    description: spec.description ?? '',
    options: spec.options,
    create: spec.create,
    build(options, env = {}) {
      const layer = spec.create(parseOptions(spec.name, spec.options, options), env)
      if (typeof layer !== 'function')
        throw new TypeError(`middleware "${spec.name}": create() returned ${typeof layer}, not a middleware function`)
      return layer
    },
  }
  return Object.freeze(definition)
}

/** True for a value made by {@link defineMiddleware}, from any installed copy of core. */
export function isMiddlewareDefinition(value: unknown): value is MiddlewareDefinition {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'shallot.middleware'
}
