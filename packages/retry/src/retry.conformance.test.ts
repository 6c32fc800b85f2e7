import { middlewareConformance } from '@shallot/testing/conformance'
import { memoryRetryBudget, retryDefinition } from './index.js'

middlewareConformance(retryDefinition, {
  validOptions: { backoff: 'constant', baseMs: 10, maxAttempts: 3 },
  invalidOptions: [{ backoff: 'fulljitter' }, { baseMs: 'fast' }, { perCode: { RateLimited: { maxAttempts: 2 } } }],
  env: { stores: { retryBudget: memoryRetryBudget() } },
})
