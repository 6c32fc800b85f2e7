import { middlewareConformance } from '@shallot/testing/conformance'
import { fallbackDefinition } from './index.js'

middlewareConformance(fallbackDefinition, {
  validOptions: { default: { from: 'cache' } },
  invalidOptions: [{ maxCacheEntries: 0 }, { on: [] }, { tools: { a: { from: 'tool', tool: 'a' } } }, { default: { from: 'nowhere' } }],
  abortOnEntry: false,
})
