import { defineMiddleware } from '@shallot/core'
import { timeout, timeoutOptionsSchema } from './timeout.js'

/**
 * `timeout` as a middleware definition, for config files and registries: a deadline per attempt of a
 * tool call (`build`) and of a model call (`buildModel`). Every option of the layer is plain data, so
 * a file holds them all.
 *
 * @example
 * const layer = timeoutDefinition.build({ ms: 10_000, tools: { search: 2_000 } })
 * const modelLayer = timeoutDefinition.buildModel({ ms: 45_000, models: { 'gpt-slow': 90_000 } })
 */
export const timeoutDefinition = defineMiddleware({
  name: 'timeout',
  description: 'Gives every attempt a deadline; a missed one is a soft, retryable timeout.',
  options: timeoutOptionsSchema,
  handles: { tools: true, models: true },
  create: (options) => timeout(options),
})
