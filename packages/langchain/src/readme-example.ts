import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { createAgent, tool } from 'langchain'
import { defaultMiddleware, defaultModelMiddleware, fallback } from 'shallot'
import { z } from 'zod'
import { loopErrorOf, shallotMiddleware, spareModel } from './index.js'

export async function explainMain(model: BaseChatModel, spare: BaseChatModel, readFile: (path: string) => Promise<string>) {
  const readFileTool = tool(({ path }) => readFile(path), {
    name: 'read_file',
    description: 'Read a file',
    schema: z.object({ path: z.string() }),
  })
  const shallot = shallotMiddleware({
    // In front of every tool call: soft errors the model reads, retries, a breaker per tool, stuck-loop detection.
    middleware: defaultMiddleware(),
    effects: { read_file: 'read' },
    // In front of every model call: the spare when the model stays down, a breaker per model, retry with the
    // server's Retry-After as a floor, a deadline per attempt.
    modelMiddleware: [fallback({ models: [spareModel(spare)] }), ...defaultModelMiddleware()],
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
