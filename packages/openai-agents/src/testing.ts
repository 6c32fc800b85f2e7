// `@shallot/openai-agents/testing`: a scripted Agents SDK model, so an agent behind shallot is tested without a provider.
import type { AgentInputItem, Model, ModelRequest, ModelResponse, StreamEvent } from '@openai/agents'
import { Usage } from '@openai/agents'

/** One reply of the scripted model: a final text, or tool calls (`args` as a value or `rawArgs` as the exact text). */
export interface Reply {
  text?: string
  calls?: ReadonlyArray<{ name: string; args?: unknown; rawArgs?: string }>
}

/**
 * What the model read last: the outputs of the function results at the end of its input, as text.
 *
 * @example
 * const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'a.txt' } }] }, (request) => ({ text: lastOutputs(request).join() })])
 */
export function lastOutputs(request: ModelRequest): string[] {
  const items = typeof request.input === 'string' ? [] : request.input
  const outputs: string[] = []
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i] as AgentInputItem & { type?: string; output?: unknown }
    if (item.type !== 'function_call_result') break
    const output = item.output as string | { type: string; text?: string }
    outputs.unshift(typeof output === 'string' ? output : String(output.text))
  }
  return outputs
}

/**
 * An implementation of the SDK's `Model` interface that plays a script (no network): each step is a
 * reply, or a function of the request so the model can react to what it read. A script that runs out
 * repeats its last step. For testing an agent and its shallot stack without a model provider.
 *
 * @example
 * import { scriptedModel } from '@shallot/openai-agents/testing'
 * const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'a.txt' } }] }, { text: 'done' }])
 * const agent = new Agent({ name: 'reader', model, tools: shallot.tools })
 */
export function scriptedModel(steps: ReadonlyArray<Reply | ((request: ModelRequest) => Reply)>): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  let index = 0
  const respond = (request: ModelRequest): ModelResponse => {
    requests.push(request)
    const step = steps[Math.min(index, steps.length - 1)]
    if (step === undefined) throw new Error('the script has no steps')
    index++
    const reply = typeof step === 'function' ? step(request) : step
    const output: ModelResponse['output'] = (reply.calls ?? []).map((call, n) => ({
      type: 'function_call' as const,
      callId: `call_${index}_${n + 1}`,
      name: call.name,
      arguments: call.rawArgs ?? JSON.stringify(call.args ?? {}),
      status: 'completed' as const,
    }))
    if (reply.text !== undefined) {
      output.push({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text }] })
    }
    return { usage: new Usage(), output, responseId: `resp_${index}` }
  }
  return {
    requests,
    async getResponse(request) {
      return respond(request)
    },
    async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
      const response = respond(request)
      yield {
        type: 'response_done',
        response: {
          id: response.responseId ?? 'resp',
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
          output: response.output,
        },
      } as StreamEvent
    },
  }
}
