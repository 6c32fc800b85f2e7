import { ToolError } from '@shallot/core'
import { middlewareConformance } from '@shallot/testing/conformance'
import { fallbackDefinition } from './index.js'

// The spare model the model checks fall back to is down too: a failing model must never complete the run.
const downSpare = (spec: string) => ({
  name: spec,
  generate: () =>
    Promise.reject(new ToolError('upstream_error', 'the spare is down too (503)', { category: 'transient', retryable: true })),
})

middlewareConformance(fallbackDefinition, {
  validOptions: { default: { from: 'cache' }, models: ['spare:down'] },
  env: { resolveModel: downSpare },
  invalidOptions: [
    { maxCacheEntries: 0 },
    { on: [] },
    { tools: { a: { from: 'tool', tool: 'a' } } },
    { default: { from: 'nowhere' } },
    { models: [] },
    { models: ['no-provider'] },
  ],
  abortOnEntry: false,
})
