import { Agent, type Model, run } from '@openai/agents'
import { policy } from '@shallot/policy'
import { z } from 'zod'
import { shallotFunctionTools } from './index.js'

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

// The policy's approve rule is the SDK's needsApproval: the run ends with interruptions, a person decides.
export async function payWithApproval(model: Model, decide: (args: string) => boolean, send: (to: string, cents: number) => string) {
  const transfer = {
    name: 'transfer',
    description: 'Move money',
    parameters: z.object({ to: z.string(), amountCents: z.number() }),
    effect: 'write' as const,
    execute: ({ to, amountCents }: { to: string; amountCents: number }) => send(to, amountCents),
  }
  const shallot = shallotFunctionTools([transfer], { middleware: [policy({ rules })] })
  const agent = new Agent({ name: 'payer', model, tools: shallot.tools })
  let result = await run(agent, 'Pay bob $500', { signal: shallot.signal })
  while (result.interruptions.length > 0) {
    for (const item of result.interruptions) {
      if (decide(item.arguments ?? '')) result.state.approve(item)
      else result.state.reject(item)
    }
    // toolErrorFormatter: a rejected call reaches the model as shallot's denied_by_user.
    result = await run(agent, result.state, { signal: shallot.signal, toolErrorFormatter: shallot.toolErrorFormatter })
  }
  return result.finalOutput
}
