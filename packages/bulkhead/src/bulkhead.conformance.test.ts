import { middlewareConformance } from '@shallot/testing/conformance'
import { bulkheadDefinition } from './index.js'

middlewareConformance(bulkheadDefinition, {
  validOptions: { limit: 2, queue: 2, maxQueueMs: 1000 },
  invalidOptions: [{ limit: 0 }, { queue: -1 }, { maxWriteQueueMs: 'soon' }, { key: 'host' }],
  abortOnEntry: true,
})
