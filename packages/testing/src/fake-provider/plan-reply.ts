import type { FakeReply, FakeRequest } from './types.js'
import type { PlannedReply, WireFormat } from './wire.js'

const ID_PREFIX = { 'openai-chat': 'chatcmpl-fake', 'openai-responses': 'resp_fake', 'anthropic-messages': 'msg_fake' } as const

/** About one token per four characters: enough for budgets to see usage grow with the conversation. */
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4))

/** Fills in what a scripted reply leaves out: ids from the request's index, arguments as text, usage from the sizes. */
export function planReply(reply: FakeReply, wire: WireFormat, request: FakeRequest, requestText: string): PlannedReply {
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `${wire.callPrefix}_${request.index}_${i}`,
    name: call.name,
    arguments: call.rawArgs ?? JSON.stringify(call.args ?? {}),
  }))
  const output = (reply.text ?? '') + toolCalls.map((call) => call.name + call.arguments).join('')
  return {
    id: `${ID_PREFIX[wire.api]}${request.index}`,
    model: request.model ?? 'fake-model',
    created: Math.floor(request.at / 1000),
    text: reply.text,
    toolCalls,
    finish: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    inputTokens: reply.usage?.inputTokens ?? tokens(requestText),
    outputTokens: reply.usage?.outputTokens ?? tokens(output),
  }
}
