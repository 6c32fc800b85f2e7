import { describe, it } from 'vitest'
import { memoryRateLimitStore } from './index.js'
import { rateLimitStoreContract } from './store-contract.js'

describe('memoryRateLimitStore keeps the store contract', () => {
  for (const c of rateLimitStoreContract(() => memoryRateLimitStore())) it(c.name, () => c.run())
})
