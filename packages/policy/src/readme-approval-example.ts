import { type Agent, createAgent, memoryCheckpoints } from '@shallot/agent'
import type { AnyTool, ApprovalAnswer, ModelAdapter } from '@shallot/core'
import { policy } from './index.js'

export function paymentsAgent(model: ModelAdapter, tools: readonly AnyTool[]): Agent {
  return createAgent({
    model,
    tools,
    checkpoints: memoryCheckpoints(),
    middleware: [policy({ rules: [{ action: 'approve', effect: 'write', reason: 'writes need a person' }] })],
  })
}

/** Runs a task; when it stops for approval, asks `decide` about each pending call and resumes once. */
export async function runWithApproval(agent: Agent, input: string, decide: (tool: string, args: string) => ApprovalAnswer) {
  const outcome = await agent.run({ input })
  if (outcome.status === 'completed' || outcome.report.pending.length === 0) return outcome
  console.error(outcome.report.text) // names each pending call and the exact agent.resume(...) to answer it
  const approvals: Record<string, ApprovalAnswer> = {}
  for (const call of outcome.report.pending) approvals[call.callId] = decide(call.tool, call.arguments)
  // The stopped turn's calls are replayed (no new model call): approved ones run once, denied ones
  // reach the model as denied_by_user, edited arguments are validated like any call.
  return agent.resume(outcome.runId, { approvals })
}
