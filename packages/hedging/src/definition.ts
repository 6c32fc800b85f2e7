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
    // `false` turns the retry layer's budget off; hedges then keep their private bucket rather than run unbounded.
    const retryBudget = (env.stores as { retryBudget?: HedgeBudgetStore | false } | undefined)?.retryBudget
    return hedging(retryBudget === undefined || retryBudget === false ? options : { ...options, retryBudget })
  },
})
