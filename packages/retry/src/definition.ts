import { defineMiddleware } from '@shallot/core'
import { memoryRetryBudget } from './memory-retry-budget.js'
import { retry } from './retry.js'
import type { RetryBudgetStore } from './retry-budget-store.js'
import { modelRetryOf } from './retry-model.js'
import { retryPolicySchema } from './retry-policy.js'

/**
 * `retry` as a middleware definition, for config files and registries: its options are the
 * plain-data policy, for tool calls (`build`) and model calls (`buildModel`, decision 510). A host that shares one token bucket across layers passes it as
 * `env.stores.retryBudget` (`false` turns the budget off).
 *
 * @example
 * const layer = retryDefinition.build({ backoff: 'full-jitter', maxAttempts: 4 }, { stores: { retryBudget } })
 * const modelLayer = retryDefinition.buildModel({ maxAttempts: 4 }, { stores: { retryBudget } })
 */
export const retryDefinition = defineMiddleware({
  name: 'retry',
  description: 'Repeats transient failures with backoff (full jitter by default), within a hard ceiling.',
  options: retryPolicySchema,
  create: (policy, env) => {
    const retryBudget = (env.stores as { retryBudget?: RetryBudgetStore | false } | undefined)?.retryBudget
    return retry(retryBudget === undefined ? policy : { ...policy, retryBudget })
  },
  createModel: (policy, env) => {
    const retryBudget = (env.stores as { retryBudget?: RetryBudgetStore | false } | undefined)?.retryBudget
    return modelRetryOf(policy, retryBudget === false ? undefined : (retryBudget ?? memoryRetryBudget()))
  },
})
