import { middlewareConformance } from '@shallot/testing/conformance'
import { rateLimitDefinition } from './index.js'

middlewareConformance(rateLimitDefinition, {
  validOptions: { limit: 2, perMs: 1000, maxWaitMs: 500 },
  invalidOptions: [
    { limit: 0 },
    { limit: Number.NaN },
    { limit: 1e12 },
    { limit: 5, perMs: -1 },
    { limit: 5, maxWaitMs: 'soon' },
    { limit: 5, key: 'tenant' },
  ],
  abortOnEntry: true,
})
