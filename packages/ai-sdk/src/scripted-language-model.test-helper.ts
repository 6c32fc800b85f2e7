import { MockLanguageModelV3 } from 'ai/test'

type CallOptions = MockLanguageModelV3['doGenerateCalls'][number]
export type Prompt = CallOptions['prompt']
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

/** One reply of the scripted model: text, tool calls, or both. */
export interface Reply {
  text?: string
  toolCalls?: ReadonlyArray<{ name: string; input: unknown; id?: string }>
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

/**
 * The AI SDK's own mock language model (`MockLanguageModelV3` from `ai/test`) playing a script:
 * each step is a reply, or a function of the prompt so the model can react to what it read.
 */
export function scriptedLanguageModel(steps: ReadonlyArray<Reply | ((prompt: Prompt) => Reply)>): MockLanguageModelV3 {
  let index = 0
  return new MockLanguageModelV3({
    async doGenerate(options): Promise<GenerateResult> {
      const step = steps[index]
      if (step === undefined) throw new Error(`the script has ${steps.length} steps and the model was asked for step ${index + 1}`)
      index++
      const reply = typeof step === 'function' ? step(options.prompt) : step
      const calls = reply.toolCalls ?? []
      return {
        content: [
          ...(reply.text === undefined ? [] : [{ type: 'text' as const, text: reply.text }]),
          ...calls.map((call, n) => ({
            type: 'tool-call' as const,
            toolCallId: call.id ?? `call_${index}_${n + 1}`,
            toolName: call.name,
            input: JSON.stringify(call.input),
          })),
        ],
        finishReason: { unified: calls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 5, text: 5, reasoning: undefined },
        },
        warnings: [],
      }
    },
  })
}
