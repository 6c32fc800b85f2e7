import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { coalesce, coalesceDataShape } from './coalesce.js'

/**
 * The options a config file can hold: every option but `scope` (a function cannot be written in a
 * file; without it every run of the stack shares).
 *
 * @example
 * coalesceFileOptionsSchema.parse({ idempotent: true })
 */
export const coalesceFileOptionsSchema = z.strictObject(coalesceDataShape)

/**
 * `coalesce` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = coalesceDefinition.build({})
 */
export const coalesceDefinition = defineMiddleware({
  name: 'coalesce',
  description: 'Identical concurrent reads (same tool, arguments, stack and scope) share one execution; writes never do.',
  options: coalesceFileOptionsSchema,
  create: (options) => coalesce(options),
})
