import { policy } from '@shallot/policy'
import { generateText, type LanguageModel, type ModelMessage, stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { shallotTools, type ToolApprovalRequestPart } from './index.js'

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

// The policy's approve rule is the SDK's needsApproval: the step ends with tool-approval-request parts.
export async function payWithApproval(
  model: LanguageModel,
  decide: (input: unknown) => boolean,
  send: (to: string, cents: number) => string,
) {
  const transfer = tool({
    description: 'Move money',
    inputSchema: z.object({ to: z.string(), amountCents: z.number() }),
    execute: async ({ to, amountCents }) => send(to, amountCents),
  })
  const shallot = shallotTools({ transfer }, { middleware: [policy({ rules })], effects: { transfer: 'write' } })
  const messages: ModelMessage[] = [{ role: 'user', content: 'Pay bob $500' }]
  for (;;) {
    const result = await generateText({ model, tools: shallot.tools, messages, stopWhen: stepCountIs(10) })
    messages.push(...result.response.messages)
    const requests = result.content.filter((part) => part.type === 'tool-approval-request') as ToolApprovalRequestPart[]
    if (requests.length === 0) return result.text
    // A no goes through the stack, so the model reads shallot's denied_by_user as the denial's reason.
    const answers = await Promise.all(
      requests.map((request) => shallot.approvalResponse(request, decide(request.toolCall.input) ? 'approve' : 'deny')),
    )
    messages.push({ role: 'tool', content: answers })
  }
}
