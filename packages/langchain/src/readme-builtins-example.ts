import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { type Clock, systemClock } from '@shallot/core'
import { retry } from '@shallot/retry'
import { type AgentMiddleware, createAgent, type StructuredTool, toolErrorMiddleware } from 'langchain'
import { loopErrorOf, shallotMiddleware } from './index.js'

export function agentWithBuiltins(model: BaseChatModel, tools: StructuredTool[], clock: Clock = systemClock) {
  return createAgent({
    model, // e.g. new ChatAnthropic({ model, maxRetries: 0 }): shallot's modelCall policy is the only retrier
    tools,
    middleware: [
      // Outside shallot it only sees what shallot throws: a hard stop stays a hard stop.
      // (The cast: LangChain's built-ins are typed with zod 3, which exactOptionalPropertyTypes refuses.)
      toolErrorMiddleware({ onError: (error) => (loopErrorOf(error) === undefined ? 'the tool failed' : undefined) }) as AgentMiddleware,
      shallotMiddleware({ middleware: [retry({ maxAttempts: 3 })], effects: { search: 'read' }, modelCall: { maxAttempts: 3 }, clock }),
    ],
  })
}
