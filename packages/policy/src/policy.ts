import {
  type AnyTool,
  type Middleware,
  type Next,
  parseOptions,
  type RunContext,
  silentLogger,
  systemClock,
  type ToolContext,
} from '@shallot/core'
import { APPROVAL_CHECK, type ApprovalCheck, MAX_TIMER_MS } from '@shallot/core/kit'
import { z } from 'zod'
import { answerIn, type OnApproval, readDecision } from './approval.js'
import { describeRules, hintFor } from './describe-rules.js'
import { approve, consume, runInward } from './policy-approve.js'
import { decide, type PolicyLayer } from './policy-decide.js'
import { blockedByPolicy, deniedByUser } from './policy-errors.js'
import { askedFor } from './policy-state.js'
import { type CompiledRule, compileRules, policyCodeRuleSchema } from './rules.js'
import { peekSlots, RunSlots } from './run-slots.js'

/**
 * Options of {@link policy}.
 *
 * @example
 * policyOptionsSchema.parse({ rules: [{ action: 'deny', tools: 'delete_*' }] }).default // 'allow'
 */
export const policyOptionsSchema = z.strictObject({
  /** Checked in order; the first that matches a call decides. */
  rules: z.array(policyCodeRuleSchema).max(1000).default([]),
  /** What happens to a call no rule matches. Default `'allow'`. */
  default: z.enum(['allow', 'deny']).default('allow'),
  /** Answers approvals in process (a UI that can ask at once). Without it, a call that needs approval stops the run. */
  onApproval: z.custom<OnApproval>((v) => typeof v === 'function', { message: 'must be a function (request) => decision' }).optional(),
  /** How long `onApproval` may take; no answer in time means deny. Default 300,000 ms (5 minutes). */
  approvalTimeoutMs: z.number().int().min(1).max(MAX_TIMER_MS).default(300_000),
  /** How long a rule's async `when` may take; no answer in time denies the call. Default 10,000 ms. */
  whenTimeoutMs: z.number().int().min(1).max(MAX_TIMER_MS).default(10_000),
  /** Tell the model, in each restricted tool's description, what the policy restricts. Default true. */
  describe: z.boolean().default(true),
})

/** What {@link policy} accepts. */
export type PolicyOptions = z.input<typeof policyOptionsSchema>

/**
 * Guardrails for tool calls. Rules (data or code) allow, deny, or send for a human's approval,
 * by tool name or glob, effect, argument predicates and per-run counts; the first that matches
 * decides, and `default` decides the rest. A denied call never runs: the model reads a soft
 * `blocked_by_policy` with the rule's reason and a hint at what is allowed. A call that needs
 * approval is put to `onApproval` when given (no answer within `approvalTimeoutMs` denies it);
 * otherwise the run stops with `LoopError('user_input_required')` naming the pending call, and
 * the answer is read from the run state (`state['shallot.policy'].approvals[callId]`) when the
 * call comes again. An answer is acted on at most once. A rule that cannot be checked (a
 * throwing `when`, one with no answer within `whenTimeoutMs`, an argument of the wrong kind)
 * denies the call. A `maxPerRun` cap holds for any number of parallel calls of a run: a call takes
 * its slot before any await and gives it back if it is refused before it goes inward.
 *
 * @example
 * const stack = createStack({
 *   tools: [transfer, readFile],
 *   middleware: [
 *     policy({
 *       rules: [
 *         { action: 'allow', tools: 'read_file', args: [{ arg: 'path', under: '/srv/data' }] },
 *         { action: 'deny', tools: 'read_file', reason: 'only files under /srv/data may be read' },
 *         { action: 'approve', tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'transfers over $100 need a person' },
 *       ],
 *     }),
 *   ],
 * })
 */
export function policy(options?: PolicyOptions): Middleware {
  const {
    rules,
    default: fallback,
    onApproval,
    approvalTimeoutMs,
    whenTimeoutMs,
    describe,
  } = parseOptions('policy()', policyOptionsSchema, options)
  const compiled = compileRules(rules)
  const ids = new Set<string>()
  for (const rule of compiled) {
    if (ids.has(rule.id)) throw new TypeError(`policy(): two rules have the id "${rule.id}"; give each rule its own id`)
    ids.add(rule.id)
  }
  const byTool = new WeakMap<AnyTool, readonly CompiledRule[]>()
  const rulesFor = (tool: AnyTool) => {
    let list = byTool.get(tool)
    if (list === undefined) {
      list = compiled.filter((rule) => rule.appliesTo(tool))
      byTool.set(tool, list)
    }
    return list
  }

  const shared: PolicyLayer = { rulesFor, fallback, onApproval, approvalTimeoutMs, whenTimeoutMs }

  const layer: Middleware = async function policy(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    // An unknown tool never runs: the terminal answers it with the names that exist.
    if (tool === undefined) return next()
    // A person's no stands whatever the rules now say: a refused call never runs (an integration relays its framework's denial this way).
    const stored = answerIn(ctx.run, ctx.call)
    if (stored === 'deny' || (typeof stored === 'object' && stored !== null && !Array.isArray(stored) && typeof stored.deny === 'string')) {
      ctx.emit('policy.approval_denied', { rule: undefined, by: 'user' })
      consume(ctx.run, ctx.call.id, 'deny')
      throw deniedByUser(tool.name, stored === 'deny' || (stored.deny as string).trim() === '' ? undefined : (stored.deny as string))
    }
    const slots = new RunSlots(ctx.run)
    try {
      return await decided(shared, ctx, tool, slots, next)
    } finally {
      // Kept by a call that went inward; given back by one refused, stopped or cancelled before it did.
      slots.release()
    }
  }
  if (describe) layer.describeTool = (tool: AnyTool, runContext: RunContext) => describeRules(rulesFor(tool), fallback, runContext)
  // Asked by integrations before the call runs: true when dispatching it now would stop for a person.
  const check: ApprovalCheck = async (call, runContext, tool) => {
    if (onApproval !== undefined || answerIn(runContext, call) !== undefined) return false
    const probe = {
      call,
      run: runContext,
      tool,
      emit: () => {},
      log: silentLogger,
      clock: systemClock,
      signal: runContext.signal,
    } as unknown as ToolContext
    const decision = await decide(shared, probe, tool, peekSlots(runContext))
    return decision.action === 'approve'
  }
  Object.defineProperty(layer, APPROVAL_CHECK, { value: check })
  return layer
}

/** Whether the run state holds a person's yes for this very call ('approve' or edited arguments), read without trusting it. */
function approvedBefore(ctx: ToolContext): boolean {
  const stored = answerIn(ctx.run, ctx.call)
  if (stored === undefined) return false
  const read = readDecision(stored)
  return (
    read.kind === 'refused_args' ||
    (read.kind === 'decision' && (read.decision === 'approve' || (typeof read.decision === 'object' && 'args' in read.decision)))
  )
}

/** Acts on the call's decision: passes it on, refuses it, asks for approval, or lets it go inward. */
async function decided(layer: PolicyLayer, ctx: ToolContext, tool: AnyTool, slots: RunSlots, next: Next): Promise<void> {
  const decision = await decide(layer, ctx, tool, slots)
  if (decision.action === 'pass') return next()
  if (decision.action === 'deny') {
    let reason = decision.reason
    // An approval given before the run stopped does not outweigh a rule that now denies the call: say that the policy changed.
    if (approvedBefore(ctx)) {
      const asked = askedFor(ctx.run, ctx.call)
      const was = typeof asked === 'object' ? asked.rule : undefined
      ctx.emit('policy.approval_outdated', { rule: decision.rule?.id, approvedUnder: was, now: 'deny' })
      const by = decision.rule === undefined ? 'no rule allows it now' : `rule ${decision.rule.id} now denies it`
      reason = `${reason} (the policy changed since this call was approved${was === undefined ? '' : ` under rule ${was}`}: ${by})`
    }
    ctx.emit('policy.denied', { rule: decision.rule?.id, reason })
    throw blockedByPolicy(
      tool.name,
      reason,
      decision.rule?.id ?? 'default',
      hintFor(decision.rule, tool, layer.rulesFor(tool), layer.fallback),
    )
  }
  if (decision.action === 'approve' && decision.rule !== undefined)
    return approve(layer, ctx, tool, decision.rule, (args) => runInward(ctx, slots, next, args))
  if (decision.rule !== undefined) ctx.emit('policy.allowed', { rule: decision.rule.id })
  return runInward(ctx, slots, next)
}
