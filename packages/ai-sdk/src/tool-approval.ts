import type { ApprovalAnswer, RunContext, Stack } from '@shallot/core'
import { type ApprovalCheck, putApproval } from '@shallot/core/kit'
import type { Tool } from 'ai'

/** The `tool-approval-request` part of a generation's content, as far as answering it needs. */
export interface ToolApprovalRequestPart {
  readonly approvalId: string
  readonly toolCall: { readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
}

/** The `tool-approval-response` part to send back in a `tool` message. */
export interface ToolApprovalResponsePart {
  type: 'tool-approval-response'
  approvalId: string
  approved: boolean
  reason?: string
}

type NeedsApproval = NonNullable<Tool['needsApproval']>

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** Whether the messages hold a person's yes to this call: its approval request and a response that approved it. */
export function approvedIn(messages: unknown, toolCallId: string): boolean {
  if (!Array.isArray(messages)) return false
  const ids = new Set<string>()
  const approved = new Set<string>()
  for (const message of messages) {
    const content = isObject(message) ? message.content : undefined
    if (!Array.isArray(content)) continue
    for (const part of content) {
      if (!isObject(part) || typeof part.approvalId !== 'string') continue
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) ids.add(part.approvalId)
      if (part.type === 'tool-approval-response' && part.approved === true) approved.add(part.approvalId)
    }
  }
  for (const id of ids) if (approved.has(id)) return true
  return false
}

/**
 * The SDK's `needsApproval` for one tool: the tool's own (if it has one) or the policy's check of
 * this call. A call the policy would stop for a person becomes the SDK's approval request instead.
 */
export function needsApprovalOf(
  name: string,
  own: Tool['needsApproval'],
  check: ApprovalCheck,
  stack: Stack,
  run: RunContext,
): NeedsApproval {
  return async (input, options) => {
    if (own === true) return true
    if (typeof own === 'function' && (await own(input, options as never))) return true
    const definition = stack.tools.get(name)
    return definition !== undefined && check({ id: options.toolCallId, name, args: input }, run, definition)
  }
}

/** Where an approval is answered: the stack and run of the tools, the call's signal, and the policy's check if there is one. */
export interface ApprovalSite {
  readonly stack: Stack
  readonly run: RunContext
  readonly signal: AbortSignal
  readonly check: ApprovalCheck | undefined
}

/**
 * Answers one approval request as the SDK expects it back. A no goes through the stack first (the
 * policy records it and nothing runs), so the `reason` the model reads is shallot's `denied_by_user`.
 */
export async function approvalResponse(
  request: ToolApprovalRequestPart,
  answer: Extract<ApprovalAnswer, 'approve' | 'deny' | { deny: string }>,
  { stack, run, signal, check }: ApprovalSite,
): Promise<ToolApprovalResponsePart> {
  if (!isObject(request) || typeof request.approvalId !== 'string' || !isObject(request.toolCall))
    throw new TypeError('approvalResponse() takes a tool-approval-request part of the result: { approvalId, toolCall }')
  const { approvalId, toolCall } = request
  if (answer === 'approve') return { type: 'tool-approval-response', approvalId, approved: true }
  if (answer !== 'deny' && !(isObject(answer) && typeof answer.deny === 'string'))
    throw new TypeError(
      `approvalResponse(): the answer must be 'approve', 'deny' or { deny: reason }; the AI SDK has no edited-arguments answer`,
    )
  const reason = answer === 'deny' ? undefined : answer.deny
  // Only a policy relays a no without running the call (its stored "deny" stands over any rule); without one, nothing is dispatched.
  if (check === undefined)
    return { type: 'tool-approval-response', approvalId, approved: false, ...(reason === undefined ? {} : { reason }) }
  putApproval(run, { id: toolCall.toolCallId, name: toolCall.toolName, args: toolCall.input }, answer)
  const result = await stack.dispatch({ id: toolCall.toolCallId, name: toolCall.toolName, args: toolCall.input }, { run, signal })
  return { type: 'tool-approval-response', approvalId, approved: false, reason: result.content }
}
