import { Agent, type Model, run } from '@openai/agents'
import { stuckLoop } from '@shallot/stuck-loop'
import { z } from 'zod'
import { shallotFunctionTools } from './index.js'

export async function explainMain(model: Model, readFile: (path: string) => Promise<string>): Promise<unknown> {
  const readFileSpec = {
    name: 'read_file',
    description: 'Read a file',
    parameters: z.object({ path: z.string() }),
    effect: 'read' as const,
    execute: ({ path }: { path: string }) => readFile(path),
  }
  const shallot = shallotFunctionTools([readFileSpec], { middleware: [stuckLoop()], limits: { maxSteps: 20 } })
  const agent = new Agent({ name: 'coder', instructions: 'Answer questions about the project.', model, tools: shallot.tools })
  const result = await run(agent, 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 10 })
  return result.finalOutput
}
