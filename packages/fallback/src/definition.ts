import { defineMiddleware, OptionsError } from '@shallot/core'
import { type FallbackDispatch, fallback, fallbackFileOptionsSchema } from './fallback.js'
import { fallbackModel, type ResolveModel } from './fallback-model.js'

/**
 * `fallback` as a middleware definition, for config files and registries. `env.dispatch` (the
 * stack's dispatch, late-bound) is passed on when the host gives one. For model calls
 * (`buildModel`), `models` names the spare models as `provider:id` and the host's
 * `env.resolveModel(spec)` turns each into an adapter, once, when the layer is built.
 *
 * @example
 * const layer = fallbackDefinition.build({ tools: { status_page: { from: 'cache' } } })
 */
export const fallbackDefinition = defineMiddleware({
  name: 'fallback',
  description:
    'Answers a read whose tool is down from its cached last good result (with its age), another tool, or a fixed value; asks the next model when a model is down.',
  options: fallbackFileOptionsSchema,
  create: ({ models: _forModelCalls, ...options }, env) => {
    const dispatch = env.dispatch as FallbackDispatch | undefined
    return fallback(dispatch === undefined ? options : { ...options, dispatch })
  },
  createModel: ({ models }, env) => {
    if (models === undefined) {
      throw new OptionsError('fallback', [
        {
          path: 'models',
          message: "is needed for model calls: list the spare models as 'provider:id', e.g. models: ['anthropic:claude-sonnet-4-5']",
        },
      ])
    }
    const resolveModel = env.resolveModel as ResolveModel | undefined
    return fallbackModel(resolveModel === undefined ? { models } : { models, resolveModel })
  },
})
