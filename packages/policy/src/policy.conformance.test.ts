import { middlewareConformance } from '@shallot/testing/conformance'
import { policyDefinition } from './index.js'

middlewareConformance(policyDefinition, {
  validOptions: {
    rules: [
      { action: 'deny', tools: 'never_*', reason: 'not this one' },
      { action: 'allow', effect: 'read' },
    ],
  },
  invalidOptions: [
    { rules: [{ action: 'block' }] },
    { default: 'maybe' },
    { rules: [{ action: 'deny', args: [{ arg: '__proto__', in: [1] }] }] },
    { approvalTimeoutMs: -1 },
    { rules: [{ action: 'deny', when: 'x > 1' }] },
  ],
  abortOnEntry: true,
})
