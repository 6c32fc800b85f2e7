import { defineMiddleware } from '@shallot/core'
import { type FallbackDispatch, fallback, fallbackFileOptionsSchema } from './fallback.js'

/**
 * `fallback` as a middleware definition, for config files and registries. `env.dispatch` (the
 * stack's dispatch, late-bound) is passed on when the host gives one.
 *
 * @example
 * const layer = fallbackDefinition.build({ tools: { status_page: { from: 'cache' } } })
 */
export const fallbackDefinition = defineMiddleware({
  name: 'fallback',
  description: 'Answers a read whose tool is down from its cached last good result (with its age), another tool, or a fixed value.',
  options: fallbackFileOptionsSchema,
  create: (options, env) => {
    const dispatch = env.dispatch as FallbackDispatch | undefined
    return fallback(dispatch === undefined ? options : { ...options, dispatch })
  },
})
