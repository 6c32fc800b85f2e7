import { type AnyTool, abortReason, type Next, type RunContext, sanitize, type ToolCall, type ToolContext, ToolError } from '@shallot/core'
import { canonicalJson, invalidArguments } from '@shallot/core/kit'
import { answerIn, askInProcess, digestOf, isNoAnswer, readDecision, staleAnswerProblem, whyNoAnswer } from './approval.js'
import type { PolicyLayer } from './policy-decide.js'
import { approvalRequired, approvalUsed, deniedByUser, type PendingApproval } from './policy-errors.js'
import { consumedAs, markConsumed } from './policy-state.js'
import type { CompiledRule } from './rules.js'
import type { RunSlots } from './run-slots.js'

const argumentsText = (args: unknown) => sanitize(canonicalJson(args) ?? 'null', { maxLength: 2000 })

export function pending(ctx: ToolContext, rule: CompiledRule, problem?: string): PendingApproval {
  const entry = {
    callId: ctx.call.id,
    tool: ctx.call.name,
    arguments: argumentsText(ctx.call.args),
    reason: rule.reason ?? `rule ${rule.id} asks for approval`,
    rule: rule.id,
    digest: digestOf(ctx.call),
  }
  return problem === undefined ? entry : { ...entry, problem }
}

export async function runInward(ctx: ToolContext, slots: RunSlots, next: Next, args?: unknown): Promise<void> {
  const current = ctx.currentSignal()
  if (current.aborted) throw abortReason(current)
  // Counted on the way in: a write that later fails may still have reached the world.
  slots.keep()
  if (args === undefined) return next()
  const original = ctx.call
  const edited: ToolCall = { id: original.id, name: original.name, args }
  // The inner layers (idempotency's key, the terminal's validation) must see the arguments the human approved.
  ;(ctx as { call: ToolCall }).call = edited
  try {
    await next()
  } finally {
    ;(ctx as { call: ToolCall }).call = original
  }
}

export async function approve(
  layer: PolicyLayer,
  ctx: ToolContext,
  tool: AnyTool,
  rule: CompiledRule,
  slots: RunSlots,
  next: Next,
): Promise<void> {
  const { onApproval, approvalTimeoutMs } = layer
  const { run: runContext, call } = ctx
  const used = consumedAs(runContext, call.id)
  if (typeof used === 'object' && used !== null && !Array.isArray(used) && used.turn === runContext.turn) {
    ctx.emit('policy.approval_used', { rule: rule.id })
    throw approvalUsed(call.name, call.id)
  }
  let answer: unknown = answerIn(runContext, call)
  const fromState = answer !== undefined
  const reason = rule.reason ?? `rule ${rule.id} asks for approval`
  if (!fromState) {
    if (onApproval === undefined) {
      ctx.emit('policy.approval_required', { rule: rule.id })
      throw approvalRequired([pending(ctx, rule, staleAnswerProblem(runContext, call))])
    }
    ctx.emit('policy.approval_requested', { rule: rule.id })
    const request = {
      runId: runContext.id,
      turn: runContext.turn,
      callId: call.id,
      tool: call.name,
      args: call.args,
      reason,
      rule: rule.id,
    }
    answer = await askInProcess(ctx, onApproval, { ...request, arguments: argumentsText(call.args) }, approvalTimeoutMs)
    if (isNoAnswer(answer)) {
      const why = whyNoAnswer(answer)
      if (why === 'failed')
        ctx.log.error({ err: (answer as { error?: unknown }).error, rule: rule.id }, 'policy: onApproval threw; the call is denied')
      ctx.emit('policy.approval_denied', { rule: rule.id, by: why })
      consume(runContext, call.id, 'deny')
      throw deniedByUser(
        call.name,
        why === 'timeout' ? `no answer within ${Math.round(approvalTimeoutMs / 1000)}s` : 'the approval could not be asked',
      )
    }
  }
  const read = readDecision(answer)
  if (read.kind === 'none') {
    if (fromState)
      throw approvalRequired([pending(ctx, rule, "the answer in the run state is not 'approve', 'deny', { deny } or { args }")])
    ctx.log.error({ rule: rule.id }, 'policy: onApproval answered something that is not a decision; the call is denied')
    ctx.emit('policy.approval_denied', { rule: rule.id, by: 'invalid_answer' })
    consume(runContext, call.id, 'deny')
    throw deniedByUser(call.name, 'the approval answer was not understood')
  }
  if (read.kind === 'refused_args') {
    consume(runContext, call.id, 'edit')
    throw new ToolError('invalid_arguments', `Invalid arguments for ${tool.name}: the edited arguments are refused: ${read.problem}`, {
      category: 'recoverable',
      safeToRepeat: true,
    })
  }
  const value = read.decision
  if (value === 'deny' || (typeof value === 'object' && 'deny' in value)) {
    ctx.emit('policy.approval_denied', { rule: rule.id, by: 'user' })
    consume(runContext, call.id, 'deny')
    throw deniedByUser(call.name, value === 'deny' || value.deny.trim() === '' ? undefined : value.deny)
  }
  if (value === 'approve') {
    ctx.emit('policy.approved', { rule: rule.id, edited: false })
    consume(runContext, call.id, 'approve')
    return runInward(ctx, slots, next)
  }
  // A plain copy (readDecision): what is validated is what the tool receives.
  const edited = value.args
  const parsed = tool.input.safeParse(edited)
  consume(runContext, call.id, 'edit')
  if (!parsed.success) throw invalidArguments(tool, parsed.error)
  ctx.emit('policy.approved', { rule: rule.id, edited: true })
  return runInward(ctx, slots, next, edited)
}

export function consume(runContext: RunContext, callId: string, as: 'approve' | 'deny' | 'edit'): void {
  markConsumed(runContext, callId, as)
}
