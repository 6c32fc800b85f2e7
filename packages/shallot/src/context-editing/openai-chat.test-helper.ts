// The plainest adapter a user writes against Chat Completions (fetch, tool calls, usage), throwing what the OpenAI SDK
// throws (status, code, type), and a check of a request body by the rules the real API applies to tool messages.
import type { Message, ModelAdapter } from '@shallot/core'

function wireMessage(message: Message): Record<string, unknown> {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.callId, content: message.content }
  if (message.role === 'user') return { role: 'user', content: message.content }
  const calls = message.toolCalls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.args) },
  }))
  return calls.length === 0
    ? { role: 'assistant', content: message.content ?? '' }
    : { role: 'assistant', content: message.content ?? null, tool_calls: calls }
}

interface ChatBody {
  choices?: Array<{
    message?: { content?: string | null; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> }
  }>
  usage?: { prompt_tokens?: number; completion_tokens?: number }
  error?: { message?: string; code?: string; type?: string }
}

export function openAiChat(baseURL: string): ModelAdapter {
  return {
    name: 'gpt-4o',
    async generate(request) {
      const response = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-not-a-secret' },
        body: JSON.stringify({
          model: 'gpt-4o',
          messages: request.messages.map(wireMessage),
          tools: request.tools.map((t) => ({
            type: 'function',
            function: { name: t.name, description: t.description, parameters: t.inputSchema },
          })),
        }),
        signal: request.signal,
      })
      const body = (await response.json()) as ChatBody
      if (!response.ok) {
        const { message, code, type } = body.error ?? {}
        throw Object.assign(new Error(`${response.status} ${message ?? ''}`), { status: response.status, code, type, error: body.error })
      }
      const reply = body.choices?.[0]?.message
      const toolCalls = (reply?.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) }))
      const { prompt_tokens: inputTokens = 0, completion_tokens: outputTokens = 0 } = body.usage ?? {}
      const usage = body.usage === undefined ? {} : { usage: { inputTokens, outputTokens } }
      return { text: reply?.content ?? '', toolCalls, ...usage }
    },
  }
}

/**
 * What Chat Completions refuses with a 400 about tool messages: a `tool` message that does not answer a call of the
 * assistant message right before its block, and an assistant's `tool_calls` not all answered. Empty when it is valid.
 */
export function chatToolProblems(body: unknown): string[] {
  const messages = (body as { messages?: Array<Record<string, unknown>> }).messages ?? []
  const problems: string[] = []
  let open = new Set<string>()
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (!open.delete(String(m.tool_call_id))) problems.push(`messages[${i}]: role 'tool' must answer a preceding 'tool_calls'`)
      continue
    }
    if (open.size > 0) problems.push(`messages[${i - 1}]: tool_call_ids without a response: ${[...open].join(', ')}`)
    const calls = (m.tool_calls ?? []) as Array<{ id: string }>
    open = new Set(calls.map((c) => c.id))
  }
  if (open.size > 0) problems.push(`the last tool_calls have no response: ${[...open].join(', ')}`)
  return problems
}
