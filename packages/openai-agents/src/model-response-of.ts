import type { ModelResponse as AgentsModelResponse } from '@openai/agents'
import type { ModelResponse, ToolCall } from '@shallot/core'

type Item = Record<string, unknown>
const isItem = (value: unknown): value is Item => typeof value === 'object' && value !== null

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined

/**
 * What the model layers see of an Agents SDK answer: its text, its function calls (arguments as the model sent
 * them) and its token usage, for the layers that read answers (usage, tracing, context editing).
 */
export function modelResponseOf(answer: AgentsModelResponse): ModelResponse {
  const toolCalls: ToolCall[] = []
  let text = ''
  for (const item of Array.isArray(answer.output) ? (answer.output as unknown[]) : []) {
    if (!isItem(item)) continue
    if (item.type === 'function_call' && typeof item.name === 'string') {
      toolCalls.push({ id: typeof item.callId === 'string' ? item.callId : '', name: item.name, args: item.arguments })
    } else if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as unknown[])
        if (isItem(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text
    }
  }
  const usage: Item = isItem(answer.usage) ? (answer.usage as unknown as Item) : {}
  const inputTokens = count(usage.inputTokens)
  const outputTokens = count(usage.outputTokens)
  return {
    toolCalls,
    ...(text === '' ? {} : { text }),
    usage: { ...(inputTokens === undefined ? {} : { inputTokens }), ...(outputTokens === undefined ? {} : { outputTokens }) },
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
  }
}
