import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { Command, MemorySaver } from '@langchain/langgraph'
import { policy } from '@shallot/policy'
import { createAgent, type HITLRequest, tool } from 'langchain'
import { z } from 'zod'
import { shallotMiddleware } from './index.js'

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

// The policy's approve rule is a LangGraph interrupt, shaped like the human-in-the-loop middleware's.
export async function payWithApproval(
  model: BaseChatModel,
  decide: (args: unknown) => boolean,
  send: (to: string, cents: number) => string,
) {
  const transfer = tool(async ({ to, amountCents }) => send(to, amountCents), {
    name: 'transfer',
    description: 'Move money',
    schema: z.object({ to: z.string(), amountCents: z.number() }),
  })
  const agent = createAgent({
    model,
    tools: [transfer],
    middleware: [shallotMiddleware({ middleware: [policy({ rules })], effects: { transfer: 'write' } })],
    checkpointer: new MemorySaver(),
  })
  const config = { configurable: { thread_id: 'payments-1' } }
  let state = await agent.invoke({ messages: [{ role: 'user', content: 'Pay bob $500' }] }, config)
  for (let asked = state.__interrupt__?.[0]; asked !== undefined; asked = state.__interrupt__?.[0]) {
    const { actionRequests } = asked.value as HITLRequest
    const decisions = actionRequests.map((action) =>
      decide(action.args) ? { type: 'approve' } : { type: 'reject', message: 'not this month' },
    )
    state = await agent.invoke(new Command({ resume: { decisions } }), config)
  }
  return String(state.messages.at(-1)?.content)
}
