// biome-ignore-all lint/suspicious/noThenProperty: classifier rules are { match, then } data
import { middlewareConformance } from '@shallot/testing/conformance'
import { errorClassifierDefinition } from './index.js'

middlewareConformance(errorClassifierDefinition, {
  validOptions: { maxLength: 300, maxRetryAfterMs: 10_000 },
  invalidOptions: [
    { maxLength: 5 },
    { secrets: 'hunter2' },
    { now: 1 },
    { rules: [{ match: { status: 99 }, then: { code: 'x', category: 'user' } }] },
  ],
})
