import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

type CallOptions = MockLanguageModelV3['doGenerateCalls'][number]
export type Prompt = CallOptions['prompt']
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
type StreamResult = Awaited<ReturnType<MockLanguageModelV3['doStream']>>
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never

/** One reply of the scripted model: text, tool calls (`input` as a value, or `rawInput` as the exact JSON text), or both. */
export interface Reply {
  text?: string
  toolCalls?: ReadonlyArray<{ name: string; input?: unknown; rawInput?: string; id?: string }>
}

/** A tool result as the model received it in its prompt. */
export interface SeenResult {
  toolName: string
  toolCallId: string
  output: { type: string; value?: unknown }
}

/** The tool results of the last tool message in a prompt, as the model reads them. */
export function lastToolResults(prompt: Prompt): SeenResult[] {
  const message = prompt.at(-1)
  if (message?.role !== 'tool') return []
  return message.content.filter((part) => part.type === 'tool-result') as SeenResult[]
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** Works with the `MockLanguageModelV3` of ai 6 (`ai/test`) and of ai 7 (`ai7/test`): same shape. */
interface MockClass<M> {
  new (options: { doGenerate: MockLanguageModelV3['doGenerate']; doStream: MockLanguageModelV3['doStream'] }): M
}

/**
 * The AI SDK's own mock language model playing a script, for `generateText` and `streamText` alike:
 * each step is a reply, or a function of the prompt so the model can react to what it read. A script
 * that runs out repeats its last step (a stubborn model).
 */
export function scriptedLanguageModel<M = MockLanguageModelV3>(
  steps: ReadonlyArray<Reply | ((prompt: Prompt) => Reply)>,
  Mock: MockClass<M> = MockLanguageModelV3 as unknown as MockClass<M>,
): M {
  let index = 0
  const next = (prompt: Prompt) => {
    const step = steps[Math.min(index, steps.length - 1)]
    if (step === undefined) throw new Error('the script has no steps')
    index++
    const reply = typeof step === 'function' ? step(prompt) : step
    const calls = (reply.toolCalls ?? []).map((call, n) => ({
      type: 'tool-call' as const,
      toolCallId: call.id ?? `call_${index}_${n + 1}`,
      toolName: call.name,
      input: call.rawInput ?? JSON.stringify(call.input),
    }))
    return { reply, calls, finishReason: { unified: calls.length > 0 ? ('tool-calls' as const) : ('stop' as const), raw: undefined } }
  }
  return new Mock({
    async doGenerate(options): Promise<GenerateResult> {
      const { reply, calls, finishReason } = next(options.prompt)
      return {
        content: [...(reply.text === undefined ? [] : [{ type: 'text' as const, text: reply.text }]), ...calls],
        finishReason,
        usage,
        warnings: [],
      }
    },
    async doStream(options): Promise<StreamResult> {
      const { reply, calls, finishReason } = next(options.prompt)
      const text: StreamPart[] =
        reply.text === undefined
          ? []
          : [
              { type: 'text-start', id: `t${index}` },
              { type: 'text-delta', id: `t${index}`, delta: reply.text },
              { type: 'text-end', id: `t${index}` },
            ]
      return {
        stream: simulateReadableStream<StreamPart>({
          chunks: [{ type: 'stream-start', warnings: [] }, ...text, ...calls, { type: 'finish', finishReason, usage }],
        }),
      }
    },
  })
}
