import { type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages'

/** Whether the model is one whose wire format has an error flag on tool results that LangChain does not set. */
export function speaksAnthropic(model: unknown): boolean {
  const llmType = (model as { _llmType?: unknown } | null)?._llmType
  return typeof llmType === 'function' && llmType.call(model) === 'anthropic'
}

/**
 * The messages for an Anthropic model with every error `ToolMessage` sent as a `tool_result` block
 * with `is_error: true`. `@langchain/anthropic` builds the block from a ToolMessage with only
 * `tool_use_id` and `content` (its `status` is dropped), but passes a `tool_result` block in a user
 * message through as written and merges consecutive user turns, so the wire carries one user turn
 * with every result, the failed ones marked. Only the request changes; the agent's state keeps the
 * ToolMessages.
 *
 * @example
 * handler({ ...request, messages: markErrorResults(request.messages) })
 */
export function markErrorResults(messages: readonly BaseMessage[]): BaseMessage[] {
  return messages.map((message) => {
    if (!ToolMessage.isInstance(message) || message.status !== 'error') return message
    return new HumanMessage({
      content: [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content, is_error: true } as never],
    })
  })
}
