// The README's example, runnable: a scripted agent reads a file through the default stack.
// The model mistypes the path, reads the soft error, and asks for the right file.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { scriptedModel } from '@shallot/testing'
import { createAgent, defaultMiddleware, defaultModelMiddleware, defineTool } from 'shallot'
import { z } from 'zod'

const root = mkdtempSync(join(tmpdir(), 'shallot-quickstart-'))
mkdirSync(join(root, 'src'))
writeFileSync(join(root, 'src/main.rs'), 'fn main() { println!("hello from shallot"); }\n')

const readTool = defineTool({
  name: 'read_file',
  description: 'Read a UTF-8 text file from the project',
  input: z.object({ path: z.string().min(1) }),
  effect: 'read',
  // A plain fs call: its ENOENT is classified into a soft not_found by the stack, no wrapping needed.
  execute: ({ path }, { signal }) => readFile(join(root, path), { encoding: 'utf8', signal }),
})

const model = scriptedModel([
  { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
  ({ lastResults }) =>
    lastResults[0]?.ok ? { text: 'read it first time' } : { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
  ({ lastResults }) => ({ text: `main.rs prints a greeting: ${lastResults[0]?.content.trim()}` }),
])

const agent = createAgent({
  model,
  tools: [readTool],
  middleware: defaultMiddleware(),
  modelMiddleware: defaultModelMiddleware(),
  limits: { maxSteps: 20 },
})
const outcome = await agent.run({ input: 'What does src/main.rs do?' })

for (const message of outcome.transcript) {
  if (message.role === 'assistant' && message.toolCalls.length > 0) {
    for (const call of message.toolCalls) console.log(`model  → ${call.name} ${JSON.stringify(call.args)}`)
  } else if (message.role === 'tool') {
    console.log(`tool   ${message.ok ? '✓' : '✗'} ${message.content.trim()}`)
  } else if (message.role === 'assistant') {
    console.log(`model  “${message.content}”`)
  }
}
console.log(outcome.status === 'completed' ? `completed in ${outcome.turns} turns` : outcome.report.text)
