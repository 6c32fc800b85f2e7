export { type Backoff, type BackoffDecision, type ExponentialOptions, exponentialOptionsSchema, MAX_DELAY_MS } from './backoff/backoff.js'
export { constant } from './backoff/constant.js'
export { decorrelatedJitter } from './backoff/decorrelated-jitter.js'
export { equalJitter } from './backoff/equal-jitter.js'
export { exponential } from './backoff/exponential.js'
export { fullJitter } from './backoff/full-jitter.js'
export { none } from './backoff/none.js'
export { backoffFromPolicy } from './backoff-from-policy.js'
export { canRepeat } from './can-repeat.js'
export {
  type MemoryRetryBudget,
  type MemoryRetryBudgetOptions,
  memoryRetryBudget,
  memoryRetryBudgetOptionsSchema,
} from './memory-retry-budget.js'
export { MAX_RECOVERY_ATTEMPTS, MAX_TOTAL_CALLS, planRetry, type RetryFacts, type RetryPlan, type RetryStopReason } from './plan-retry.js'
export { type RetryOptions, retry, retryOptionsSchema } from './retry.js'
export { isRetryBudgetStore, type RetryBudgetStore } from './retry-budget-store.js'
export { BACKOFF_NAMES, type BackoffName, type RetryPolicy, type RetryPolicyInput, retryPolicySchema } from './retry-policy.js'
