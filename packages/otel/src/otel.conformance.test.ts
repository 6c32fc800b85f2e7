import { middlewareConformance } from '@shallot/testing/conformance'
import { otelDefinition } from './index.js'

middlewareConformance(otelDefinition, {
  validOptions: { secrets: ['sk-test-secret'] },
  invalidOptions: [{ secrets: 'sk-test-secret' }, { secrets: [''] }, { tracer: {} }],
})
