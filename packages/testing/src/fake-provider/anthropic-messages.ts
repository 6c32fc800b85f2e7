import { anthropicErrors, argumentPieces, inputOf, type PlannedReply, type SseEvent, textPieces, type WireFormat } from './wire.js'

const stopReason = (reply: PlannedReply) => ({ stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' })[reply.finish]

function content(reply: PlannedReply) {
  const blocks: unknown[] = []
  if (reply.text !== undefined) blocks.push({ type: 'text', text: reply.text })
  for (const call of reply.toolCalls) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.arguments) })
  return blocks
}

/** Anthropic Messages (`POST /v1/messages`): a `message`, or `message_start` … `message_stop` events. */
export const anthropicMessages: WireFormat = {
  api: 'anthropic-messages',
  path: '/v1/messages',
  callPrefix: 'toolu',
  json(reply) {
    return {
      id: reply.id,
      type: 'message',
      role: 'assistant',
      model: reply.model,
      content: content(reply),
      stop_reason: stopReason(reply),
      stop_sequence: null,
      usage: {
        input_tokens: reply.inputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: reply.outputTokens,
      },
    }
  },
  events(reply) {
    const events: Array<Record<string, unknown>> = []
    events.push({
      type: 'message_start',
      message: {
        id: reply.id,
        type: 'message',
        role: 'assistant',
        model: reply.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: reply.inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    })
    let index = 0
    if (reply.text !== undefined) {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
      events.push({ type: 'ping' })
      for (const text of textPieces(reply.text)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } })
      events.push({ type: 'content_block_stop', index })
      index++
    }
    for (const call of reply.toolCalls) {
      events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } })
      for (const partial_json of argumentPieces(call.arguments)) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } })
      }
      events.push({ type: 'content_block_stop', index })
      index++
    }
    events.push({
      type: 'message_delta',
      delta: { stop_reason: stopReason(reply), stop_sequence: null },
      usage: { output_tokens: reply.outputTokens },
    })
    events.push({ type: 'message_stop' })
    return events.map((data) => ({ event: data.type as string, data }))
  },
  error(kind, message) {
    const e = anthropicErrors[kind]
    return { status: e.status, body: { type: 'error', error: { type: e.type, message: message ?? e.message } } }
  },
  streamError(errorType, message): SseEvent {
    const type = errorType ?? 'overloaded_error'
    return {
      event: 'error',
      data: { type: 'error', error: { type, message: message ?? (type === 'overloaded_error' ? 'Overloaded' : 'Internal server error') } },
    }
  },
}
