import { defineMiddleware } from '@shallot/core'
import { timeout, timeoutOptionsSchema } from './timeout.js'

/**
 * `timeout` as a middleware definition, for config files and registries. Every option of the layer
 * is plain data, so a file holds them all.
 *
 * @example
 * const layer = timeoutDefinition.build({ ms: 10_000, tools: { search: 2_000 } })
 */
export const timeoutDefinition = defineMiddleware({
  name: 'timeout',
  description: 'Gives every attempt a deadline; a missed one is a soft, retryable timeout.',
  options: timeoutOptionsSchema,
  create: (options) => timeout(options),
})
