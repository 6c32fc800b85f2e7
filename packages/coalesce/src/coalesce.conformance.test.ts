import { middlewareConformance } from '@shallot/testing/conformance'
import { coalesceDefinition } from './index.js'

// The conformance tool is idempotent: with `idempotent: true` every check runs through the shared execution.
middlewareConformance(coalesceDefinition, {
  validOptions: { idempotent: true },
  invalidOptions: [{ idempotent: 'yes' }, { scope: 'tenant' }, { idempotent: true, tenant: 'a' }],
  abortOnEntry: true,
})
