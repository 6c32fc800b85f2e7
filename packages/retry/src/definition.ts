import { defineMiddleware } from '@shallot/core'
import { retry } from './retry.js'
import type { RetryBudgetStore } from './retry-budget-store.js'
import { retryPolicySchema } from './retry-policy.js'

/**
 * `retry` as a middleware definition, for config files and registries: its options are the
 * plain-data policy, and it wraps tool calls (`build`) and model calls (`buildModel`) alike. A host
 * that shares one token bucket across layers passes it as `env.stores.retryBudget` (`false` turns
 * the budget off).
 *
 * @example
 * const layer = retryDefinition.build({ backoff: 'full-jitter', maxAttempts: 4 }, { stores: { retryBudget } })
 * const modelLayer = retryDefinition.buildModel({ maxAttempts: 4 }, { stores: { retryBudget } })
 */
export const retryDefinition = defineMiddleware({
  name: 'retry',
  description: 'Repeats transient failures with backoff (full jitter by default), within a hard ceiling.',
  options: retryPolicySchema,
  handles: { tools: true, models: true },
  create: (policy, env) => {
    const retryBudget = (env.stores as { retryBudget?: RetryBudgetStore | false } | undefined)?.retryBudget
    return retry(retryBudget === undefined ? policy : { ...policy, retryBudget })
  },
})
