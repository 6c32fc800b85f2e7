import { contextEditing } from '@shallot/context-editing'
import { type AnyTool, createAgent, defaultModelMiddleware, type ModelAdapter } from 'shallot'

/** Old tool results are cleared for the model when a request nears 100,000 tokens, or the provider refuses it as too long. */
export function longRunningAgent(model: ModelAdapter, tools: AnyTool[]) {
  return createAgent({
    model,
    tools,
    modelMiddleware: [contextEditing({ maxInputTokens: 100_000, keep: 3, excludeTools: ['read_plan'] }), ...defaultModelMiddleware()],
  })
}
