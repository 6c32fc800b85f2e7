import { middlewareConformance } from '@shallot/testing/conformance'
import { stuckLoopDefinition } from './index.js'

middlewareConformance(stuckLoopDefinition, {
  validOptions: { refuseAfter: 2 },
  invalidOptions: [{ refuseAfter: 0 }, { stopAfter: 'soon' }, { refuseAfter: 4, stopAfter: 3 }],
})
