import { createAgent } from '@shallot/agent'
import { type AnyTool, createRun, type Json, type ModelAdapter, type Stack, type ToolCall } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { panicCatcher } from '@shallot/panic-catcher'
import { stuckLoop } from '@shallot/stuck-loop'
import { type OnApproval, policy, putApproval } from './index.js'

const rules = [
  { action: 'deny' as const, tools: 'delete_*', reason: 'nothing is deleted by this agent' },
  {
    id: 'big',
    action: 'approve' as const,
    tools: 'transfer',
    args: [{ arg: 'amountCents', gt: 10_000 }],
    reason: 'over $100 needs a person',
  },
]

// A UI that can ask at once: the agent waits for the answer (two minutes at most, then it is a no).
export function askingAgent(model: ModelAdapter, tools: readonly AnyTool[], ask: OnApproval) {
  return createAgent({
    model,
    tools,
    middleware: [panicCatcher(), stuckLoop(), policy({ rules, onApproval: ask, approvalTimeoutMs: 120_000 }), idempotency()],
  })
}

// No UI at hand: the call stops the run; later, the answer goes into the run state, bound to that very
// call (its turn, tool and arguments), and the call comes again.
export async function answerLater(stack: Stack, call: ToolCall, answer: 'approve' | 'deny' | { deny: string } | { args: Json }) {
  const run = createRun({ id: 'run-42' })
  putApproval(run, call, answer)
  return stack.dispatch(call, { run })
}
