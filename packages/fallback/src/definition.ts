import { defineMiddleware } from '@shallot/core'
import { fallback } from './fallback.js'
import { type FallbackDispatch, fallbackFileOptionsSchema, sidesOf } from './fallback-options.js'
import type { ResolveModel } from './model-fallback.js'

/**
 * `fallback` as a middleware definition, for config files and registries: one layer, whose tool side
 * serves `stack:` and whose model side serves `modelMiddleware:`. `env.dispatch` (the stack's dispatch,
 * late-bound) is passed on when the host gives one. `models` names the spare models as `provider:id`
 * and the host's `env.resolveModel(spec)` turns each into an adapter, once, when the layer is built.
 *
 * @example
 * const layer = fallbackDefinition.build({ tools: { status_page: { from: 'cache' } } })
 * const modelLayer = fallbackDefinition.buildModel({ models: ['anthropic:claude-sonnet-4-5'] }, { resolveModel })
 */
export const fallbackDefinition = defineMiddleware({
  name: 'fallback',
  description:
    'Answers a read whose tool is down from its cached last good result (with its age), another tool, or a fixed value; asks the next model when a model is down.',
  options: fallbackFileOptionsSchema,
  handles: { tools: true, models: true },
  create: (options, env) => {
    // The host's functions go to the side that reads them; a side the file's options do not make gets none.
    const sides = sidesOf(options)
    const dispatch = env.dispatch as FallbackDispatch | undefined
    const resolveModel = env.resolveModel as ResolveModel | undefined
    return fallback({
      ...options,
      ...(dispatch === undefined || !sides.tools ? {} : { dispatch }),
      ...(resolveModel === undefined || !sides.models ? {} : { resolveModel }),
    })
  },
})
