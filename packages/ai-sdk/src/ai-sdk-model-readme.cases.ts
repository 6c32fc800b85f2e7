import { createOpenAI } from '@ai-sdk/openai'
import { createAgent } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { z } from 'zod'
import { aiSdkModel } from './index.js'

/** A shallot agent on an OpenAI model (the key from OPENAI_API_KEY): the SDK returns the tool calls, the agent runs them. */
export async function explainMain(openai = createOpenAI()) {
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a file of the project',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: async ({ path }) => (path === 'src/main.rs' ? 'fn main() {}' : `no such file: ${path}`),
  })
  const agent = createAgent({
    model: aiSdkModel(openai('gpt-4o-mini'), { system: 'You are a terse code reviewer.' }),
    tools: [readFile],
  })
  const outcome = await agent.run({ input: 'What does src/main.rs do?' })
  return outcome.status === 'completed' ? outcome.output : outcome.report.text
}
