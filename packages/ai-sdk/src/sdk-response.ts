import type { ModelFinishReason, ModelResponse, ModelUsage, ToolCall } from '@shallot/core'
import type { GenerateResult } from './sdk-model-types.js'

// What the model layers (a usage budget, stuck-loop) read of a model's answer, from the specification's result.

const FINISH: Record<string, ModelFinishReason> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined

/** A token count given as a number, or as `{ total }` (the v3 and v4 specifications). */
const tokens = (value: unknown): number | undefined =>
  count(typeof value === 'object' && value !== null ? (value as { total?: unknown }).total : value)

/** The usage a result or a stream's `finish` part reports, in shallot's words; none when it reports no count. */
export function usageOf(usage: unknown): ModelUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined
  const input = tokens((usage as { inputTokens?: unknown }).inputTokens)
  const output = tokens((usage as { outputTokens?: unknown }).outputTokens)
  if (input === undefined && output === undefined) return undefined
  const counted: { inputTokens?: number; outputTokens?: number } = {}
  if (input !== undefined) counted.inputTokens = input
  if (output !== undefined) counted.outputTokens = output
  return counted
}

function argsOf(input: unknown): unknown {
  if (typeof input !== 'string') return input
  try {
    return JSON.parse(input)
  } catch {
    return input
  }
}

/** The answer of one `doGenerate`: its text, the tool calls the SDK will run, usage and finish reason. */
export function responseOf(result: GenerateResult): ModelResponse {
  let text = ''
  const toolCalls: ToolCall[] = []
  const content = result.content as ReadonlyArray<{ type: string; [key: string]: unknown }>
  for (let i = 0; i < content.length; i++) {
    const part = content[i] as { type: string; [key: string]: unknown }
    if (part.type === 'text' && typeof part.text === 'string') text += part.text
    else if (part.type === 'tool-call' && part.providerExecuted !== true)
      toolCalls.push({ id: String(part.toolCallId), name: String(part.toolName), args: argsOf(part.input) })
  }
  const reason: unknown = result.finishReason
  const unified = typeof reason === 'string' ? reason : (reason as { unified?: unknown } | undefined)?.unified
  const response: { text?: string; toolCalls: ToolCall[]; finishReason: ModelFinishReason; usage?: ModelUsage } = {
    toolCalls,
    finishReason: typeof unified === 'string' && Object.hasOwn(FINISH, unified) ? (FINISH[unified] as ModelFinishReason) : 'other',
  }
  if (text !== '') response.text = text
  const usage = usageOf(result.usage)
  if (usage !== undefined) response.usage = usage
  return response
}
