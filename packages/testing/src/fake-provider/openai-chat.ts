import { argumentPieces, openaiErrors, type PlannedReply, type SseEvent, textPieces, type WireFormat } from './wire.js'

function usage(reply: PlannedReply) {
  return {
    prompt_tokens: reply.inputTokens,
    completion_tokens: reply.outputTokens,
    total_tokens: reply.inputTokens + reply.outputTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  }
}

function chunk(reply: PlannedReply, choices: unknown[], extra: Record<string, unknown> = {}): SseEvent {
  return {
    data: {
      id: reply.id,
      object: 'chat.completion.chunk',
      created: reply.created,
      model: reply.model,
      system_fingerprint: 'fp_fake',
      choices,
      ...extra,
    },
  }
}

/** OpenAI Chat Completions (`POST /v1/chat/completions`): a `chat.completion`, or `chat.completion.chunk` events ending in `[DONE]`. */
export const openaiChat: WireFormat = {
  api: 'openai-chat',
  path: '/v1/chat/completions',
  callPrefix: 'call',
  json(reply) {
    return {
      id: reply.id,
      object: 'chat.completion',
      created: reply.created,
      model: reply.model,
      system_fingerprint: 'fp_fake',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text ?? null,
            refusal: null,
            ...(reply.toolCalls.length > 0
              ? {
                  tool_calls: reply.toolCalls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: { name: call.name, arguments: call.arguments },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: reply.finish,
        },
      ],
      usage: usage(reply),
    }
  },
  events(reply) {
    const events: SseEvent[] = [
      chunk(reply, [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]),
    ]
    for (const piece of textPieces(reply.text ?? '')) {
      events.push(chunk(reply, [{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]))
    }
    reply.toolCalls.forEach((call, index) => {
      events.push(
        chunk(reply, [
          {
            index: 0,
            delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] },
            logprobs: null,
            finish_reason: null,
          },
        ]),
      )
      for (const piece of argumentPieces(call.arguments)) {
        events.push(
          chunk(reply, [
            { index: 0, delta: { tool_calls: [{ index, function: { arguments: piece } }] }, logprobs: null, finish_reason: null },
          ]),
        )
      }
    })
    events.push(chunk(reply, [{ index: 0, delta: {}, logprobs: null, finish_reason: reply.finish }]))
    // stream_options.include_usage: one last chunk with no choices and the usage.
    events.push(chunk(reply, [], { usage: usage(reply) }))
    events.push({ data: '[DONE]' })
    return events
  },
  error(kind, message) {
    const e = openaiErrors[kind]
    return { status: e.status, body: { error: { message: message ?? e.message, type: e.type, param: e.param, code: e.code } } }
  },
  streamError(errorType, message) {
    return {
      data: {
        error: {
          message: message ?? openaiErrors.server_error.message,
          type: errorType ?? 'server_error',
          param: null,
          code: errorType ?? 'server_error',
        },
      },
    }
  },
}
