import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createAgent, tool } from 'langchain'
import { z } from 'zod'
import { loopErrorOf, shallotMiddleware } from './index.js'

export async function explainMain(model: BaseChatModel, readFile: (path: string) => Promise<string>): Promise<string> {
  const readFileTool = tool(({ path }) => readFile(path), {
    name: 'read_file',
    description: 'Read a file',
    schema: z.object({ path: z.string() }),
  })
  const shallot = shallotMiddleware({
    middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })],
    effects: { read_file: 'read' },
  })
  const agent = createAgent({ model, tools: [readFileTool], middleware: [shallot] })
  try {
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'What does src/main.rs do?' }] })
    return String(messages.at(-1)?.content)
  } catch (error) {
    const hard = loopErrorOf(error) // a hard stop: LangChain wraps the LoopError
    if (hard === undefined) throw error
    return `stopped: ${hard.kind}`
  }
}
