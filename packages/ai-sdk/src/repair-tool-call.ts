import type { ToolCallRepairFunction, ToolSet } from 'ai'

const isInvalidInput = (error: unknown) => (error as { name?: unknown } | null)?.name === 'AI_InvalidToolInputError'

/**
 * The `experimental_repairToolCall` (ai 7: `repairToolCall`) that hands a tool call whose arguments
 * are not valid JSON to the stack instead of letting the SDK answer it: the raw text travels as a
 * JSON string, and the stack, which parses string arguments itself, answers `invalid_arguments`
 * ("arguments are not valid JSON: …") through every layer, so stuck-loop counts a model that keeps
 * sending it. Calls of tools the set does not wrap, and unknown tool names, are left to the SDK (`null`).
 */
export function repairMalformedInput(wrapped: ReadonlySet<string>): ToolCallRepairFunction<ToolSet> {
  return async function repairToolCall({ toolCall, error }) {
    if (!isInvalidInput(error) || !wrapped.has(toolCall.toolName)) return null
    return { ...toolCall, input: JSON.stringify(toolCall.input) }
  }
}
