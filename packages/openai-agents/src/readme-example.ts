import { Agent, OpenAIChatCompletionsModel, run } from '@openai/agents'
import type OpenAI from 'openai'
import { defaultMiddleware, defaultModelMiddleware } from 'shallot'
import { z } from 'zod'
import { shallotFunctionTools, shallotModel } from './index.js'

export async function explainMain(client: OpenAI, readFile: (path: string) => Promise<string>): Promise<unknown> {
  const readFileSpec = {
    name: 'read_file',
    description: 'Read a file',
    parameters: z.object({ path: z.string() }),
    effect: 'read' as const,
    execute: ({ path }: { path: string }) => readFile(path),
  }
  // In front of every tool call: soft errors the model reads, retries, a breaker per tool, stuck-loop detection.
  const shallot = shallotFunctionTools([readFileSpec], { middleware: defaultMiddleware(), limits: { maxSteps: 20 } })
  // In front of every model call: a breaker, retry with the server's Retry-After as a floor, a deadline per attempt.
  const model = shallotModel(new OpenAIChatCompletionsModel(client, 'gpt-4o'), {
    name: 'gpt-4o',
    modelMiddleware: defaultModelMiddleware(),
    run: shallot.run,
  })
  const agent = new Agent({ name: 'coder', instructions: 'Answer questions about the project.', model, tools: shallot.tools })
  const result = await run(agent, 'What does src/main.rs do?', {
    signal: shallot.signal,
    callModelInputFilter: shallot.callModelInputFilter,
    maxTurns: 10,
  })
  return result.finalOutput
}
