import { middlewareConformance } from '@shallot/testing/conformance'
import { timeoutDefinition } from './index.js'

middlewareConformance(timeoutDefinition, {
  validOptions: { ms: 1000 },
  invalidOptions: [{ ms: 0 }, { ms: 'soon' }, { ms: Number.POSITIVE_INFINITY }, { tools: { search: -1 } }],
  abortOnEntry: true,
})
