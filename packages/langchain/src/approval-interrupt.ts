import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import { interrupt } from '@langchain/langgraph'
import type { ApprovalAnswer, Json, RunContext, Stack } from '@shallot/core'
import { type ApprovalCheck, putApproval } from '@shallot/core/kit'

const ALLOWED = ['approve', 'edit', 'reject'] as const
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const SHAPE = `resume with new Command({ resume: { decisions: [{ type: 'approve' } | { type: 'edit', editedAction: { name, args } } | { type: 'reject', message? }] } }), one per action request`

/** The answer a human-in-the-loop decision gives the policy, or what is wrong with it. */
function answerOf(decision: unknown, name: string): ApprovalAnswer | string {
  if (!isObject(decision)) return 'a decision is not an object'
  if (decision.type === 'approve') return 'approve'
  if (decision.type === 'reject')
    return typeof decision.message === 'string' && decision.message.trim() !== '' ? { deny: decision.message.slice(0, 1000) } : 'deny'
  if (decision.type === 'edit') {
    const action = decision.editedAction
    if (!isObject(action) || !isObject(action.args)) return 'an edit decision needs editedAction: { name, args }'
    if (action.name !== undefined && action.name !== name) return `an edit decision cannot change the tool (${name}) to another`
    return { args: action.args as Json }
  }
  return `a decision's type must be one of ${ALLOWED.join(', ')}`
}

/**
 * After the model's turn: the calls the policy would stop for a person become one LangGraph
 * `interrupt()` in the human-in-the-loop middleware's shape (`{ actionRequests, reviewConfigs }`),
 * and the resume value's `decisions` become the policy's answers in the run state. The tool calls
 * then go through the stack as usual: approved ones run once, rejected ones answer `denied_by_user`,
 * edited ones are validated with the tool's schema. Nothing here has a side effect before the
 * interrupt, so the node's re-run on resume is safe.
 */
export async function interruptForApprovals(
  messages: readonly BaseMessage[],
  check: ApprovalCheck,
  stack: Stack,
  run: RunContext,
): Promise<void> {
  const last = [...messages].reverse().find((message) => AIMessage.isInstance(message)) as AIMessage | undefined
  const calls = last?.tool_calls ?? []
  const waiting: Array<{ id: string; name: string; args: Record<string, unknown> }> = []
  for (const call of calls) {
    const tool = stack.tools.get(call.name)
    const id = call.id ?? ''
    if (tool !== undefined && (await check({ id, name: call.name, args: call.args }, run, tool)))
      waiting.push({ id, name: call.name, args: call.args })
  }
  if (waiting.length === 0) return
  const response: unknown = interrupt({
    actionRequests: waiting.map((call) => ({
      name: call.name,
      args: call.args,
      description: `${call.name} needs a person's approval (shallot policy); call id ${call.id}`,
    })),
    reviewConfigs: waiting.map((call) => ({ actionName: call.name, allowedDecisions: [...ALLOWED] })),
  })
  const decisions = isObject(response) ? response.decisions : undefined
  if (!Array.isArray(decisions) || decisions.length !== waiting.length)
    throw new TypeError(
      `shallotMiddleware(): ${waiting.length} call${waiting.length === 1 ? '' : 's'} wait${waiting.length === 1 ? 's' : ''} for approval (${waiting.map((c) => c.name).join(', ')}); ${SHAPE}`,
    )
  const answers = waiting.map((call, i) => answerOf(decisions[i], call.name))
  const problem = answers.findIndex((answer) => typeof answer === 'string' && answer !== 'approve' && answer !== 'deny')
  if (problem !== -1) throw new TypeError(`shallotMiddleware(): decisions[${problem}]: ${answers[problem]}; ${SHAPE}`)
  waiting.forEach((call, i) => {
    putApproval(run, call, answers[i] as ApprovalAnswer)
  })
}
