import { createAgent, defineTool, type StackEvent, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { z } from 'zod'
import { type Print, printRun } from '../timeline.js'

/** An in-memory file system, enough for the story. */
export function memoryFiles(files: Record<string, string>) {
  const fs = new Map(Object.entries(files))
  return defineTool({
    name: 'read_file',
    description: 'Read a UTF-8 text file from the project',
    input: z.object({ path: z.string().min(1) }),
    effect: 'read',
    execute: ({ path }) => {
      const text = fs.get(path)
      if (text === undefined) {
        throw new ToolError('not_found', `file ${path} not found`, { hint: `files in the project: ${[...fs.keys()].join(', ')}` })
      }
      return text
    },
  })
}

/** The model mistypes a path, reads the soft not_found, and asks for the right file. */
export async function mistypedPath(print: Print): Promise<void> {
  const readFile = memoryFiles({ 'src/main.rs': 'fn main() { println!("hello from shallot") }', 'Cargo.toml': '[package]\nname = "demo"' })
  const model = scriptedModel([
    { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
    ({ lastResults }) =>
      lastResults[0]?.ok ? { text: 'read it on the first try' } : { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
    ({ lastResults }) => ({ text: `main.rs prints a greeting: ${lastResults[0]?.content ?? '?'}` }),
  ])
  const agent = createAgent({ model, tools: [readFile] })
  const events: StackEvent[] = []
  agent.stack.on((event) => events.push(event))
  const outcome = await agent.run({ input: 'What does src/main.rs do?' })
  printRun(print, outcome, events)
}
