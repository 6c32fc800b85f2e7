import { middlewareConformance } from '@shallot/testing/conformance'
import { idempotencyDefinition, memoryIdempotencyStore } from './index.js'

middlewareConformance(idempotencyDefinition, {
  validOptions: { ttlMs: 60_000 },
  invalidOptions: [{ ttlMs: -1 }, { effects: ['delete'] }, { scope: 'two words' }, { store: 'memory' }],
  env: { stores: { idempotency: memoryIdempotencyStore() } },
})
