import { defineMiddleware } from '@shallot/core'
import { panicCatcher, panicCatcherOptionsSchema } from './panic-catcher.js'

/**
 * The panic catcher as a config file writes it: every option but `redact` (a function cannot be
 * written in a file).
 *
 * @example
 * panicCatcherFileOptionsSchema.parse({ maxMessageLength: 300, hint: false })
 */
export const panicCatcherFileOptionsSchema = panicCatcherOptionsSchema.omit({ redact: true })

/**
 * `panicCatcher` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = panicCatcherDefinition.build({ maxMessageLength: 300 })
 */
export const panicCatcherDefinition = defineMiddleware({
  name: 'panic-catcher',
  description: 'Turns anything thrown that is not a ToolError or LoopError into a soft tool_panic the model can read.',
  options: panicCatcherFileOptionsSchema,
  create: (options) => panicCatcher(options),
})
