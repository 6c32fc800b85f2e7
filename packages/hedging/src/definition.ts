import { defineMiddleware } from '@shallot/core'
import { hedging, hedgingFileOptionsSchema } from './hedging.js'
import type { HedgeBudgetStore } from './token-bucket.js'

/**
 * `hedging` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = hedgingDefinition.build({ delayMs: 250 }, { stores: { retryBudget } })
 */
export const hedgingDefinition = defineMiddleware({
  name: 'hedging',
  description: 'A second attempt for a slow read or idempotent call; the first success wins, the loser is cancelled.',
  options: hedgingFileOptionsSchema,
  create: (options, env) => {
    const retryBudget = (env.stores as { retryBudget?: HedgeBudgetStore } | undefined)?.retryBudget
    return hedging(retryBudget === undefined ? options : { ...options, retryBudget })
  },
})
