import { defineMiddleware } from '@shallot/core'
import type { contextEditing } from './context-editing.js'
import { contextEditingFileOptionsSchema, contextEditingOf } from './context-editing.js'

/**
 * `context-editing` as a middleware definition, for config files and registries: model calls only
 * (`buildModel`; `build` refuses it, naming the fix), listed under `modelMiddleware:`, outside `error-classifier`. Its options are
 * {@link contextEditing}'s but `countTokens`, which a file cannot hold.
 *
 * @example
 * const layer = contextEditingDefinition.buildModel({ strategy: 'clearToolResults', keep: 3, maxInputTokens: 100_000 })
 */
export const contextEditingDefinition = defineMiddleware({
  name: 'context-editing',
  description:
    'Shortens a model request that would not fit the context window (old tool results cleared, or the last turns kept) and asks once more; never cuts a tool call from its result.',
  options: contextEditingFileOptionsSchema,
  handles: { tools: false, models: true },
  create: (options) => contextEditingOf(options),
})
