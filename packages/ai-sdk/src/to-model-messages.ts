import type { Message, ModelTool } from '@shallot/core'
import { jsonSchema, type ModelMessage, type ToolSet, tool } from 'ai'
import { softErrorOutput } from './soft-error-output.js'

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A tool call's input as a provider accepts it back: an object. Arguments that never parsed (kept
 * as the raw text so the stack can answer `invalid_arguments`) go back as `{}`, as the SDK does,
 * because Anthropic refuses a `tool_use` whose input is not an object.
 */
function replayInput(args: unknown): Record<string, unknown> {
  if (isPlainObject(args)) return args
  if (typeof args === 'string') {
    try {
      const parsed: unknown = JSON.parse(args)
      if (isPlainObject(parsed)) return parsed
    } catch {}
  }
  return {}
}

/**
 * shallot's transcript as AI SDK messages. A failed tool result is the provider's error result when
 * its wire format has one (`flagErrors`: Anthropic's `is_error`), else the same text as plain output.
 */
export function toModelMessages(messages: readonly Message[], flagErrors = false): ModelMessage[] {
  const out: ModelMessage[] = []
  for (const message of messages) {
    if (message.role === 'user') out.push({ role: 'user', content: message.content })
    else if (message.role === 'assistant') {
      const text = message.content === undefined || message.content === '' ? [] : [{ type: 'text' as const, text: message.content }]
      const calls = message.toolCalls.map((call) => ({
        type: 'tool-call' as const,
        toolCallId: call.id,
        toolName: call.name,
        input: replayInput(call.args),
      }))
      out.push({ role: 'assistant', content: [...text, ...calls] })
    } else {
      const part = {
        type: 'tool-result' as const,
        toolCallId: message.callId,
        toolName: message.name,
        output: message.ok ? { type: 'text' as const, value: message.content } : softErrorOutput(message.content, flagErrors),
      }
      // Results of one turn travel in one tool message, as every provider expects after a multi-call turn.
      const last = out[out.length - 1]
      if (last?.role === 'tool') (last.content as unknown[]).push(part)
      else out.push({ role: 'tool', content: [part] })
    }
  }
  return out
}

/** shallot's tools as an AI SDK tool set with no `execute`: the SDK returns the calls, the stack runs them. */
export function toToolSet(tools: readonly ModelTool[]): ToolSet {
  // No prototype: a tool named `__proto__` or `constructor` is a key like any other.
  const set: ToolSet = Object.create(null)
  for (const t of tools) {
    // The description already carries the layers' note ("UNAVAILABLE: circuit open …").
    set[t.name] = tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]) })
  }
  return set
}
