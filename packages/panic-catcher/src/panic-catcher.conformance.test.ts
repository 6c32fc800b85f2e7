import { middlewareConformance } from '@shallot/testing/conformance'
import { panicCatcherDefinition } from './index.js'

middlewareConformance(panicCatcherDefinition, {
  validOptions: { maxMessageLength: 300 },
  invalidOptions: [{ maxMessageLength: 10 }, { hint: 5 }, { redact: 'secrets' }],
})
