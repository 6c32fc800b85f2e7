import { middlewareConformance } from '@shallot/testing/conformance'
import { contextEditingDefinition } from './index.js'

middlewareConformance(contextEditingDefinition, {
  validOptions: { strategy: 'clearToolResults', keep: 3, maxInputTokens: 100_000 },
  invalidOptions: [
    { keep: -1 },
    { strategy: 'summarize' },
    { maxInputTokens: 0 },
    { models: { 'gpt-4o': 'big' } },
    { placeholder: '' },
    { charsPerToken: Number.NaN },
    { strategy: 'keepLast', excludeTools: ['search'] },
  ],
})
