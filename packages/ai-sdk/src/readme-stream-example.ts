import { LoopError } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { createUIMessageStream, createUIMessageStreamResponse, type LanguageModel, stepCountIs, streamText, type Tool } from 'ai'
import { shallotTools } from './index.js'

export function chat(model: LanguageModel, readFile: Tool, abortSignal: AbortSignal): Response {
  const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop()], signal: abortSignal })
  const stream = createUIMessageStream({
    execute({ writer }) {
      const result = streamText({
        model,
        prompt: 'What does src/main.rs do?',
        tools: shallot.tools,
        abortSignal: shallot.abortSignal, // the user's stop stays an abort...
        experimental_transform: shallot.streamTransform, // ...a shallot hard stop becomes an error
        experimental_repairToolCall: shallot.repairToolCall, // malformed JSON goes through the stack
        stopWhen: [stepCountIs(10), shallot.stopOnHardError],
        // streamText logs every stream error to the console unless told otherwise: a hard stop is the UI's to tell.
        onError: ({ error }) => {
          if (!LoopError.is(error)) console.error(error)
        },
      })
      writer.merge(result.toUIMessageStream({ onError: (error) => (error instanceof Error ? error.message : 'error') }))
    },
    onError: (error) => (error instanceof Error ? error.message : 'error'),
  })
  return createUIMessageStreamResponse({ stream })
}
