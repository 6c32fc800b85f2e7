import { defineMiddleware } from '@shallot/core'
import { stuckLoop, stuckLoopOptionsSchema } from './stuck-loop.js'

/**
 * `stuckLoop` as a middleware definition, for config files and registries. Every option of the
 * layer is plain data, so a file holds them all.
 *
 * @example
 * const layer = stuckLoopDefinition.build({ refuseAfter: 2, stopAfter: 5 })
 */
export const stuckLoopDefinition = defineMiddleware({
  name: 'stuck-loop',
  description: 'Refuses a call that keeps failing the same way; ends the run with loop_detected past a threshold.',
  options: stuckLoopOptionsSchema,
  // The parsed limits carry `successRepeatLimit` and `convergence` as undefined when off; the factory takes them only when set.
  create: ({ successRepeatLimit, convergence, ...limits }) =>
    stuckLoop({
      ...limits,
      ...(successRepeatLimit === undefined ? {} : { successRepeatLimit }),
      ...(convergence === undefined ? {} : { convergence }),
    }),
})
