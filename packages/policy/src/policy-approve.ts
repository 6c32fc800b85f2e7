import { type AnyTool, abortReason, type Next, type RunContext, sanitize, type ToolCall, type ToolContext, ToolError } from '@shallot/core'
import { canonicalJson, invalidArguments } from '@shallot/core/kit'
import { answerIn, askInProcess, digestOf, isNoAnswer, readDecision, staleAnswerProblem, whyNoAnswer } from './approval.js'
import type { PolicyLayer } from './policy-decide.js'
import { approvalRequired, approvalUsed, deniedByUser, type PendingApproval } from './policy-errors.js'
import { askedFor, consumedAs, dropAnswer, markConsumed, recordAsked } from './policy-state.js'
import type { CompiledRule } from './rules.js'
import type { RunSlots } from './run-slots.js'

const argumentsText = (args: unknown) => sanitize(canonicalJson(args) ?? 'null', { maxLength: 2000 })

/** Why an answer given before the run stopped no longer approves the call: the rule that asks now is not the one, as configured, that asked then. */
interface Outdated {
  /** The rule the call was approved under, when the record says. */
  readonly was: string | undefined
  /** What changed, in words for the person asked again. */
  readonly change: string
}

/** Whether the policy changed since this call was approved: undefined when the same rule, as configured, asks (or nothing recorded which one did). */
function outdated(run: RunContext, call: ToolCall, rule: CompiledRule): Outdated | undefined {
  const asked = askedFor(run, call)
  if (asked === undefined) return undefined
  if (asked === 'unreadable') return { was: undefined, change: 'the record of the rule it was approved under cannot be read' }
  if (asked.fingerprint === rule.fingerprint) return undefined
  return {
    was: asked.rule,
    change: asked.rule === rule.id ? `rule ${rule.id} was changed` : `rule ${rule.id} now asks for approval instead of rule ${asked.rule}`,
  }
}

const askedAgain = (reason: string, again: Outdated) => `${reason}; asked again: the policy changed since it was approved (${again.change})`

/** Stops the run for a person's answer to this call, recording the rule that asks so that an answer stands only while it does. */
function stopFor(ctx: ToolContext, rule: CompiledRule, problem?: string, again?: Outdated): never {
  recordAsked(ctx.run, ctx.call, { rule: rule.id, fingerprint: rule.fingerprint })
  // A policy change is already in the reason ("asked again: …"); any other problem goes into the message too.
  throw approvalRequired([pending(ctx, rule, problem, again)], again === undefined ? problem : undefined)
}

export function pending(ctx: ToolContext, rule: CompiledRule, problem?: string, again?: Outdated): PendingApproval {
  const why = rule.reason ?? `rule ${rule.id} asks for approval`
  const entry = {
    callId: ctx.call.id,
    tool: ctx.call.name,
    arguments: argumentsText(ctx.call.args),
    reason: again === undefined ? why : askedAgain(why, again),
    rule: rule.id,
    digest: digestOf(ctx.call),
  }
  return problem === undefined ? entry : { ...entry, problem }
}

export async function runInward(ctx: ToolContext, slots: RunSlots, next: Next, args?: unknown): Promise<void> {
  const current = ctx.signal
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

/**
 * Runs a call a rule asks approval for: with the person's answer (given before the run stopped, or asked now
 * through `onApproval`), the call goes `inward` as approved or with the edited arguments, or is refused.
 */
export async function approve(
  layer: PolicyLayer,
  ctx: ToolContext,
  tool: AnyTool,
  rule: CompiledRule,
  inward: (editedArgs?: unknown) => Promise<void>,
): Promise<void> {
  const { run: runContext, call } = ctx
  // The answer in the run state is read and consumed with no wait between: of parallel repeats of one approved call, one runs.
  const standing = standingAnswer(ctx, rule)
  const fromState = standing.answer !== undefined
  const answer = fromState ? standing.answer : await ask(layer, ctx, rule, standing.again)
  const read = readDecision(answer)
  if (read.kind === 'none') {
    if (fromState) stopFor(ctx, rule, "the answer in the run state is not 'approve', 'deny', { deny } or { args }")
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
    return inward()
  }
  // A plain copy (readDecision): what is validated is what the tool receives.
  const edited = value.args
  const parsed = tool.input.safeParse(edited)
  consume(runContext, call.id, 'edit')
  if (!parsed.success) throw invalidArguments(tool, parsed.error)
  ctx.emit('policy.approved', { rule: rule.id, edited: true })
  return inward(edited)
}

/**
 * The answer given before the run stopped, when it still stands for the rule that asks now; none when there is
 * no answer or it was given under another rule (`again` says what changed). Throws when this turn already used it.
 */
function standingAnswer(ctx: ToolContext, rule: CompiledRule): { answer: unknown; again: Outdated | undefined } {
  const { run: runContext, call } = ctx
  const used = consumedAs(runContext, call.id)
  if (typeof used === 'object' && used !== null && !Array.isArray(used) && used.turn === runContext.turn) {
    ctx.emit('policy.approval_used', { rule: rule.id })
    throw approvalUsed(call.name, call.id)
  }
  const answer: unknown = answerIn(runContext, call)
  const again = answer === undefined ? undefined : outdated(runContext, call, rule)
  if (again === undefined) return { answer, again }
  // Given for what another rule (or this one, as it was) asked: it approves nothing now, nor on a later resume.
  ctx.emit('policy.approval_outdated', { rule: rule.id, approvedUnder: again.was, now: 'approve' })
  dropAnswer(runContext, call.id)
  return { answer: undefined, again }
}

/** Asks the person through `onApproval`; without one the run stops for the answer, and no answer in time denies the call. */
async function ask(layer: PolicyLayer, ctx: ToolContext, rule: CompiledRule, again: Outdated | undefined): Promise<unknown> {
  const { onApproval, approvalTimeoutMs } = layer
  const { run: runContext, call } = ctx
  if (onApproval === undefined) {
    ctx.emit('policy.approval_required', { rule: rule.id })
    if (again !== undefined)
      stopFor(
        ctx,
        rule,
        `the policy changed since this call was approved (${again.change}), so the approval does not stand; answer this call again`,
        again,
      )
    stopFor(ctx, rule, staleAnswerProblem(runContext, call))
  }
  ctx.emit('policy.approval_requested', { rule: rule.id })
  const reason = rule.reason ?? `rule ${rule.id} asks for approval`
  const request = {
    runId: runContext.id,
    turn: runContext.turn,
    callId: call.id,
    tool: call.name,
    args: call.args,
    // A person asked again is told why: the answer they gave before was to another question.
    reason: again === undefined ? reason : askedAgain(reason, again),
    rule: rule.id,
  }
  const answer = await askInProcess(ctx, onApproval, { ...request, arguments: argumentsText(call.args) }, approvalTimeoutMs)
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
  return answer
}

export function consume(runContext: RunContext, callId: string, as: 'approve' | 'deny' | 'edit'): void {
  markConsumed(runContext, callId, as)
}
