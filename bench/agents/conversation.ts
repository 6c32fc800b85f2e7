/**
 * The conversation so far, read the same way from the three wire formats: the user's task and
 * each tool call with its result. This is all the brain sees.
 */
export interface Exchange {
  readonly id: string
  readonly name: string
  /** The result's text, as the framework rendered it; `undefined` when no result was sent back. */
  result?: string
  /** The wire's own error flag (Anthropic `is_error`), where the framework set it. */
  isError?: boolean
}

export interface Conversation {
  readonly prompt: string
  readonly exchanges: Exchange[]
}

type Json = Record<string, unknown>
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  return list(content)
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : isRecord(part) ? JSON.stringify(part) : ''))
    .join('')
}

export function conversationOf(api: string | undefined, body: unknown): Conversation {
  const exchanges: Exchange[] = []
  const byId = new Map<string, Exchange>()
  const call = (id: string, name: string) => {
    const exchange: Exchange = { id, name }
    exchanges.push(exchange)
    byId.set(id, exchange)
  }
  const answer = (id: string, content: string, isError?: boolean) => {
    const exchange = byId.get(id)
    if (exchange === undefined) return
    exchange.result = content
    if (isError === true) exchange.isError = true
  }
  let prompt = ''
  const b = isRecord(body) ? body : {}
  if (api === 'anthropic-messages') {
    for (const message of list(b.messages).filter(isRecord)) {
      if (message.role === 'user' && prompt === '' && typeof message.content === 'string') prompt = message.content
      for (const part of list(message.content).filter(isRecord)) {
        if (part.type === 'text' && message.role === 'user' && prompt === '') prompt = String(part.text)
        if (part.type === 'tool_use') call(String(part.id), String(part.name))
        if (part.type === 'tool_result') answer(String(part.tool_use_id), textOf(part.content), part.is_error === true)
      }
    }
  } else if (api === 'openai-chat') {
    for (const message of list(b.messages).filter(isRecord)) {
      if (message.role === 'user' && prompt === '') prompt = textOf(message.content)
      if (message.role === 'assistant')
        for (const tc of list(message.tool_calls).filter(isRecord))
          call(String(tc.id), String(isRecord(tc.function) ? tc.function.name : ''))
      if (message.role === 'tool') answer(String(message.tool_call_id), textOf(message.content))
    }
  } else {
    const input = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : list(b.input)
    for (const item of input.filter(isRecord)) {
      if (item.role === 'user' && prompt === '') prompt = textOf(item.content)
      if (item.type === 'function_call') call(String(item.call_id), String(item.name))
      if (item.type === 'function_call_output')
        answer(String(item.call_id), typeof item.output === 'string' ? item.output : textOf(item.output))
    }
  }
  return { prompt, exchanges }
}
