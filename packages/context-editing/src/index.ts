export {
  CONTEXT_EDITED,
  type ContextEditingLayer,
  type ContextEditingOptions,
  type ContextEditingStrategy,
  contextEditing,
  contextEditingFileOptionsSchema,
  contextEditingOptionsSchema,
  DEFAULT_KEEP,
} from './context-editing.js'
export { contextEditingDefinition as default, contextEditingDefinition, contextEditingDefinition as definition } from './definition.js'
export { type EditCounts, pairingProblems } from './edit-messages.js'
export { estimateTokens, TOKENS_PER_MESSAGE } from './estimate-tokens.js'
