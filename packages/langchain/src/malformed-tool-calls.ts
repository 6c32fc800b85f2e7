import { AIMessage, type InvalidToolCall, type ToolCall } from '@langchain/core/messages'

type ChunkLike = { id?: string; index?: number; args?: string }

function isCompleteJson(raw: string): boolean {
  if (raw.trim() === '') return true // a tool without parameters: LangChain and core both read "" as {}
  try {
    JSON.parse(raw)
    return true
  } catch {
    return false
  }
}

/**
 * The model's message with every malformed tool call turned into a tool call the agent will hand to
 * `wrapToolCall` (with `{}` as arguments, so the transcript stays valid for every provider), and the
 * argument text of each reported to `onMalformed` under its call id. The middleware dispatches that
 * text, and core's argument guard refuses it as `invalid_arguments` ("arguments are not valid JSON")
 * before any tool runs, through every layer, so stuck-loop counts it. Two sources: `invalid_tool_calls` (LangChain could not
 * parse the arguments: left alone, the agent would end with an empty answer), and streamed
 * `tool_call_chunks` whose text is not complete JSON (LangChain "repairs" `{"path":"src/mian.r` into
 * `{ path: 'src/mian.r' }` and would run the tool with the truncated value). Returns the message itself
 * when nothing is malformed.
 */
export function surfaceMalformedCalls(message: AIMessage, onMalformed: (id: string, raw: string) => void): AIMessage {
  const invalid: readonly InvalidToolCall[] = message.invalid_tool_calls ?? []
  const chunks = ((message as { tool_call_chunks?: ChunkLike[] }).tool_call_chunks ?? []).filter((c) => typeof c.args === 'string')
  const toolCalls: ToolCall[] = []
  let changed = invalid.length > 0
  for (const [position, call] of (message.tool_calls ?? []).entries()) {
    const chunk = call.id === undefined ? chunks[position] : chunks.find((c) => c.id === call.id)
    if (chunk?.args === undefined || isCompleteJson(chunk.args)) {
      toolCalls.push(call)
      continue
    }
    const id = call.id ?? `malformed_${position}`
    onMalformed(id, chunk.args)
    toolCalls.push({ ...call, id, args: {} })
    changed = true
  }
  for (const [position, call] of invalid.entries()) {
    const id = call.id ?? `malformed_${toolCalls.length}_${position}`
    onMalformed(id, call.args ?? '')
    toolCalls.push({ name: call.name ?? '', args: {}, id, type: 'tool_call' })
  }
  if (!changed) return message
  return new AIMessage({
    content: message.content,
    tool_calls: toolCalls,
    invalid_tool_calls: [],
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    ...(message.id === undefined ? {} : { id: message.id }),
    ...(message.name === undefined ? {} : { name: message.name }),
    ...(message.usage_metadata === undefined ? {} : { usage_metadata: message.usage_metadata }),
  })
}
