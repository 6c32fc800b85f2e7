import { LoopError, ToolError } from '@shallot/core'
import { POLICY_STATE_KEY } from './policy-state.js'

/** A call that waits for a human, as the stopped run's details name it. */
export interface PendingApproval {
  readonly callId: string
  readonly tool: string
  /** The arguments as canonical JSON, sanitized and capped: what the human is asked to approve. */
  readonly arguments: string
  /** Why approval is needed: the rule's reason. */
  readonly reason: string
  readonly rule: string
  /**
   * What an answer to this call binds to: the digest of its tool and arguments as sent (canonical
   * JSON). `agent.resume` binds each answer to it, so an answer approves this call and no other.
   */
  readonly digest: string
  /** Set when the run state held an answer for this call that is not one the policy understands. */
  readonly problem?: string
}

/**
 * The soft refusal of a call a rule denies: the model reads the reason and what would be allowed.
 * `safeToRepeat`, because the call never reached the tool; not retryable, because the same call
 * meets the same rule.
 *
 * @example
 * blockedByPolicy('transfer', 'transfers over $100 need a manager', 'rule-2', 'amountCents <= 10000').message
 * // "call to 'transfer' blocked by policy: transfers over $100 need a manager"
 */
export function blockedByPolicy(tool: string, reason: string, rule: string, hint: string): ToolError {
  return new ToolError('blocked_by_policy', `call to '${tool}' blocked by policy: ${reason}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint,
    details: { rule },
  })
}

/**
 * The soft answer to a call a human declined: the model reads their reason and picks another route.
 *
 * @example
 * deniedByUser('transfer', 'not this month').message // "the user denied the call to 'transfer': not this month"
 */
export function deniedByUser(tool: string, reason: string | undefined): ToolError {
  return new ToolError('denied_by_user', `the user denied the call to '${tool}'${reason === undefined ? '' : `: ${reason}`}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: 'do not repeat this call; continue without it, or ask the user what they want instead',
  })
}

/**
 * The soft refusal of a call whose approval was already acted on in this turn: an approval runs a
 * call at most once, however often the run is resumed with it.
 *
 * @example
 * approvalUsed('transfer', 'call_1').code // 'approval_used'
 */
export function approvalUsed(tool: string, callId: string): ToolError {
  return new ToolError('approval_used', `the approval of call ${callId} to '${tool}' was already used; the call does not run again`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: false,
    hint: 'check whether the earlier call took effect before asking for it again',
  })
}

/**
 * The hard stop of a run that needs a human's decision. `details.pending` names each call exactly;
 * the answers go into the run state under `details.stateKey`, `approvals[callId]`. `why`, when given,
 * says in the message why an answer the run state held did not count.
 *
 * @example
 * approvalRequired([{ callId: 'c1', tool: 'transfer', arguments: '{"amountCents":50000}', reason: 'over $100', rule: 'big', digest: '9f…' }]).kind
 * // 'user_input_required'
 */
export function approvalRequired(pending: readonly PendingApproval[], why?: string): LoopError {
  const first = pending[0] as PendingApproval
  const message = `call ${first.callId} to '${first.tool}' needs approval: ${first.reason}${why === undefined ? '' : `; ${why}`}`
  return new LoopError('user_input_required', message, {
    details: {
      tool: first.tool,
      code: 'approval_required',
      message: first.reason,
      pending,
      stateKey: POLICY_STATE_KEY,
      answers: "'approve' | 'deny' | { deny: reason } | { args }",
    },
  })
}
