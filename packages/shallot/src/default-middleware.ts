import { builtins, type DefaultBuiltin } from '@shallot/config'
import { type Layer, type LayerEntry, type Middleware, parseOptions, toolSideOf } from '@shallot/core'
import { z } from 'zod'

/** Options for each of the seven layers of the default stack, by factory name; `false` leaves a layer out. */
export type DefaultMiddlewareOptions = {
  [B in DefaultBuiltin as B['option']]?: Parameters<B['create']>[0] | false
}

const defaults = builtins.filter((b): b is DefaultBuiltin => b.inDefaultStack)

/** The names of the layers, outermost first: the recommended order (see docs/onion.md for why). */
export const DEFAULT_ORDER: readonly (keyof DefaultMiddlewareOptions)[] = Object.freeze(defaults.map((b) => b.option))

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
export function defaultMiddleware(options: DefaultMiddlewareOptions = {}): LayerEntry<Middleware>[] {
  parseOptions('defaultMiddleware()', defaultMiddlewareOptionsSchema, options)
  const layers: LayerEntry<Middleware>[] = []
  for (const { option, create } of defaults) {
    const layerOptions = options[option]
    if (layerOptions === false) continue
    layers.push(toolSideOf((create as (o: unknown) => Middleware | Layer)(layerOptions), `defaultMiddleware(): ${option}`))
  }
  return layers
}
