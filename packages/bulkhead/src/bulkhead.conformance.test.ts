import { middlewareConformance } from '@shallot/testing/conformance'
import { bulkheadDefinition } from './index.js'

middlewareConformance(bulkheadDefinition, {
  validOptions: { maxConcurrent: 2, maxQueue: 2, maxQueueMs: 1000 },
  invalidOptions: [{ maxConcurrent: 0 }, { maxQueue: -1 }, { maxWriteQueueMs: 'soon' }, { key: 'host' }],
  abortOnEntry: true,
})
