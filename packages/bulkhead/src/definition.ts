import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { bulkhead, bulkheadDataShape } from './bulkhead.js'

/**
 * The bulkhead as a config file names it: every option but `key` (a function cannot be written in
 * a file; without it the compartments are per tool).
 *
 * @example
 * bulkheadFileOptionsSchema.parse({ maxConcurrent: 4, maxQueue: 10, maxWriteQueueMs: 0 })
 */
export const bulkheadFileOptionsSchema = z.strictObject(bulkheadDataShape)

/**
 * `bulkhead` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = bulkheadDefinition.build({ maxConcurrent: 4, maxQueue: 10 })
 */
export const bulkheadDefinition = defineMiddleware({
  name: 'bulkhead',
  description: 'At most N calls at once per tool (or host, tenant) with a bounded queue; past it a soft overloaded.',
  options: bulkheadFileOptionsSchema,
  create: (options) => bulkhead(options),
})
