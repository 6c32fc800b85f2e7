import { middlewareConformance } from '@shallot/testing/conformance'
import { hedgingDefinition } from './index.js'

middlewareConformance(hedgingDefinition, {
  validOptions: { delayMs: 50 },
  invalidOptions: [{ delayMs: 0 }, { effects: ['write'] }, { percentile: 2 }, { minSamples: 500 }],
  abortOnEntry: true,
})
