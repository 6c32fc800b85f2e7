import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

type Prompt = MockLanguageModelV3['doGenerateCalls'][number]['prompt']
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
type StreamResult = Awaited<ReturnType<MockLanguageModelV3['doStream']>>
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never

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

/** The AI SDK's own mock model (`ai/test`), playing one reply per step (for generateText and streamText); a step may read the prompt. */
export function scriptedModel(steps: ReadonlyArray<Reply | ((prompt: Prompt) => Reply)>): MockLanguageModelV3 {
  let index = 0
  return new MockLanguageModelV3({
    async doStream({ prompt }): Promise<StreamResult> {
      const { content, finishReason, usage } = await generate(prompt)
      const parts: StreamPart[] = content.flatMap((part): StreamPart[] =>
        part.type === 'text'
          ? [
              { type: 'text-start', id: 'text' },
              { type: 'text-delta', id: 'text', delta: part.text },
              { type: 'text-end', id: 'text' },
            ]
          : [part as StreamPart],
      )
      return {
        stream: simulateReadableStream({
          chunks: [{ type: 'stream-start', warnings: [] }, ...parts, { type: 'finish', finishReason, usage }],
        }),
      }
    },
    doGenerate: ({ prompt }) => generate(prompt),
  })

  async function generate(prompt: Prompt): Promise<GenerateResult> {
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
  }
}
