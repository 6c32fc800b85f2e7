import { defineMiddleware } from '@shallot/core'
import { bulkhead, bulkheadOptionsSchema } from './bulkhead.js'

/**
 * The bulkhead as a config file names it: every option but `key` (a function cannot be written in
 * a file; without it the compartments are per tool).
 *
 * @example
 * bulkheadFileOptionsSchema.parse({ limit: 4, queue: 10, maxWriteQueueMs: 0 })
 */
export const bulkheadFileOptionsSchema = bulkheadOptionsSchema.omit({ key: true })

/**
 * `bulkhead` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = bulkheadDefinition.build({ limit: 4, queue: 10 })
 */
export const bulkheadDefinition = defineMiddleware({
  name: 'bulkhead',
  description: 'At most N calls at once per tool (or host, tenant) with a bounded queue; past it a soft overloaded.',
  options: bulkheadFileOptionsSchema,
  create: (options) => bulkhead(options),
})
