import type { FakeApi } from './types.js'

type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])

/** The text of a content field: a string, or the `text` of its parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  return list(content)
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .join('')
}

function joined(texts: string[]): string | undefined {
  const kept = texts.filter((text) => text.length > 0)
  return kept.length === 0 ? undefined : kept.join('\n')
}

/** What every test asks of a request, read the same way from the three APIs. */
export interface RequestView {
  model: string | undefined
  system: string | undefined
  toolNames: string[]
  toolResults: Array<{ id: string; content: string }>
}

export function viewOf(api: FakeApi | undefined, body: unknown): RequestView {
  if (!isRecord(body) || api === undefined) return { model: undefined, system: undefined, toolNames: [], toolResults: [] }
  const model = typeof body.model === 'string' ? body.model : undefined
  const tools = list(body.tools).filter(isRecord)
  if (api === 'anthropic-messages') {
    const results = list(body.messages)
      .filter(isRecord)
      .flatMap((message) => list(message.content))
      .filter((part): part is Json => isRecord(part) && part.type === 'tool_result')
      .map((part) => ({ id: String(part.tool_use_id), content: textOf(part.content) }))
    return { model, system: joined([textOf(body.system)]), toolNames: tools.map((tool) => String(tool.name)), toolResults: results }
  }
  const messages = list(api === 'openai-chat' ? body.messages : body.input).filter(isRecord)
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content))
  if (typeof body.instructions === 'string') system.unshift(body.instructions)
  const toolResults =
    api === 'openai-chat'
      ? messages.filter((m) => m.role === 'tool').map((m) => ({ id: String(m.tool_call_id), content: textOf(m.content) }))
      : messages
          .filter((m) => m.type === 'function_call_output')
          .map((m) => ({ id: String(m.call_id), content: typeof m.output === 'string' ? m.output : textOf(m.output) }))
  const toolNames = tools.map((tool) => String(api === 'openai-chat' && isRecord(tool.function) ? tool.function.name : tool.name))
  return { model, system: joined(system), toolNames, toolResults }
}
