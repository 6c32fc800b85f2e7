import { argumentPieces, openaiErrors, type PlannedReply, textPieces, type WireFormat } from './wire.js'

function usage(reply: PlannedReply) {
  return {
    input_tokens: reply.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: reply.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: reply.inputTokens + reply.outputTokens,
  }
}

const messageId = (reply: PlannedReply) => `msg_${reply.id.slice(5)}`
const itemId = (reply: PlannedReply, index: number) => `fc_${reply.id.slice(5)}_${index}`

function messageItem(reply: PlannedReply, status: 'in_progress' | 'completed', text: string | undefined) {
  return {
    id: messageId(reply),
    type: 'message',
    status,
    role: 'assistant',
    content: text === undefined ? [] : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  }
}

function callItem(reply: PlannedReply, index: number, status: 'in_progress' | 'completed' | 'incomplete', args: string) {
  const call = reply.toolCalls[index] as PlannedReply['toolCalls'][number]
  return { id: itemId(reply, index), type: 'function_call', status, arguments: args, call_id: call.id, name: call.name }
}

function response(reply: PlannedReply, done: boolean) {
  const incomplete = done && reply.finish === 'length'
  const output: unknown[] = []
  if (done && reply.text !== undefined) output.push(messageItem(reply, 'completed', reply.text))
  if (done) {
    reply.toolCalls.forEach((call, i) => {
      output.push(callItem(reply, i, incomplete ? 'incomplete' : 'completed', call.arguments))
    })
  }
  return {
    id: reply.id,
    object: 'response',
    created_at: reply.created,
    status: done ? (incomplete ? 'incomplete' : 'completed') : 'in_progress',
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    model: reply.model,
    output,
    parallel_tool_calls: true,
    usage: done ? usage(reply) : null,
  }
}

/**
 * OpenAI Responses (`POST /v1/responses`): a `response` object, or typed events (`response.created` …
 * `response.completed` / `response.incomplete`), each with its `sequence_number`.
 */
export const openaiResponses: WireFormat = {
  api: 'openai-responses',
  path: '/v1/responses',
  callPrefix: 'call',
  json(reply) {
    return response(reply, true)
  },
  events(reply) {
    const events: Array<Record<string, unknown>> = []
    events.push({ type: 'response.created', response: response(reply, false) })
    events.push({ type: 'response.in_progress', response: response(reply, false) })
    let outputIndex = 0
    if (reply.text !== undefined) {
      const item_id = messageId(reply)
      const output_index = outputIndex++
      events.push({ type: 'response.output_item.added', output_index, item: messageItem(reply, 'in_progress', undefined) })
      events.push({
        type: 'response.content_part.added',
        item_id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      })
      for (const delta of textPieces(reply.text)) {
        events.push({ type: 'response.output_text.delta', item_id, output_index, content_index: 0, delta, logprobs: [] })
      }
      events.push({ type: 'response.output_text.done', item_id, output_index, content_index: 0, text: reply.text, logprobs: [] })
      events.push({
        type: 'response.content_part.done',
        item_id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: reply.text, annotations: [] },
      })
      events.push({ type: 'response.output_item.done', output_index, item: messageItem(reply, 'completed', reply.text) })
    }
    reply.toolCalls.forEach((call, i) => {
      const output_index = outputIndex++
      const item_id = itemId(reply, i)
      events.push({ type: 'response.output_item.added', output_index, item: callItem(reply, i, 'in_progress', '') })
      for (const delta of argumentPieces(call.arguments))
        events.push({ type: 'response.function_call_arguments.delta', item_id, output_index, delta })
      events.push({ type: 'response.function_call_arguments.done', item_id, output_index, arguments: call.arguments })
      const status = reply.finish === 'length' ? 'incomplete' : 'completed'
      events.push({ type: 'response.output_item.done', output_index, item: callItem(reply, i, status, call.arguments) })
    })
    const final = response(reply, true)
    events.push({ type: final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response: final })
    return events.map((data, sequence_number) => ({ event: data.type as string, data: { ...data, sequence_number } }))
  },
  error(kind, message) {
    const e = openaiErrors[kind]
    const param = e.param === 'messages' ? 'input' : e.param
    return { status: e.status, body: { error: { message: message ?? e.message, type: e.type, param, code: e.code } } }
  },
  streamError(errorType, message, sequence) {
    return {
      event: 'error',
      data: {
        type: 'error',
        code: errorType ?? 'server_error',
        message: message ?? openaiErrors.server_error.message,
        param: null,
        sequence_number: sequence,
      },
    }
  },
}
