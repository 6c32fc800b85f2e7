import { MockLanguageModelV3 } from 'ai/test'

type Prompt = MockLanguageModelV3['doGenerateCalls'][number]['prompt']
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

/** What the model read last: the outputs of the tool results at the end of its prompt. */
export function lastOutputs(prompt: Prompt): Array<{ type: string; value?: unknown }> {
  const message = prompt.at(-1)
  if (message?.role !== 'tool') return []
  return message.content.flatMap((part) => (part.type === 'tool-result' ? [part.output as { type: string; value?: unknown }] : []))
}

export interface Reply {
  text?: string
  call?: { name: string; input: unknown }
}

/** The AI SDK's own mock model (`ai/test`), playing one reply per step; a step may read the prompt. */
export function scriptedModel(steps: ReadonlyArray<Reply | ((prompt: Prompt) => Reply)>): MockLanguageModelV3 {
  let index = 0
  return new MockLanguageModelV3({
    async doGenerate({ prompt }): Promise<GenerateResult> {
      const step = steps[Math.min(index, steps.length - 1)] as Reply | ((prompt: Prompt) => Reply)
      index++
      const reply = typeof step === 'function' ? step(prompt) : step
      return {
        content: [
          ...(reply.text === undefined ? [] : [{ type: 'text' as const, text: reply.text }]),
          ...(reply.call === undefined
            ? []
            : [
                {
                  type: 'tool-call' as const,
                  toolCallId: `call_${index}`,
                  toolName: reply.call.name,
                  input: JSON.stringify(reply.call.input),
                },
              ]),
        ],
        finishReason: { unified: reply.call === undefined ? 'stop' : 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 0, text: 0, reasoning: undefined },
        },
        warnings: [],
      }
    },
  })
}
