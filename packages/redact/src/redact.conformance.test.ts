import { middlewareConformance } from '@shallot/testing/conformance'
import { redactDefinition } from './index.js'

middlewareConformance(redactDefinition, {
  validOptions: { strategies: { card: 'mask', api_key: 'block' }, patterns: [{ name: 'order_id', pattern: 'ORD-2026-00042' }] },
  invalidOptions: [
    { strategy: 'erase' },
    { detectors: ['phone'] },
    { strategies: { phone: 'mask' } },
    { patterns: [{ name: 'email', pattern: 'abcd' }] },
    { patterns: [{ name: 'x', pattern: 'ab' }] },
    { hashKey: 'short' },
    { maxNesting: 0 },
  ],
  abortOnEntry: false,
})
