import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { generateText, type LanguageModel, stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { shallotTools } from './index.js'

export async function explainMain(model: LanguageModel, readFile: (path: string) => Promise<string>): Promise<string> {
  const readFileTool = tool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string() }),
    execute: ({ path }) => readFile(path),
  })
  const shallot = shallotTools(
    { read_file: readFileTool },
    // model: which provider reads the results (Anthropic flags a soft error as is_error on the wire).
    { model, middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], effects: { read_file: 'read' } },
  )
  const { text } = await generateText({
    model,
    prompt: 'What does src/main.rs do?',
    tools: shallot.tools,
    abortSignal: shallot.abortSignal, // a hard stop (LoopError) aborts the generation...
    stopWhen: [stepCountIs(10), shallot.stopOnHardError], // ...even on its last step
  })
  return text
}
