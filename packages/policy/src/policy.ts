import {
  type AnyTool,
  abortReason,
  type Middleware,
  type Next,
  parseOptions,
  type RunContext,
  sanitize,
  silentLogger,
  systemClock,
  type ToolCall,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { APPROVAL_CHECK, type ApprovalCheck, canonicalJson, invalidArguments } from '@shallot/core/kit'
import { z } from 'zod'
import { answerIn, askInProcess, digestOf, isNoAnswer, type OnApproval, readDecision, staleAnswerProblem, whyNoAnswer } from './approval.js'
import { describeRules, hintFor } from './describe-rules.js'
import { approvalRequired, approvalUsed, blockedByPolicy, deniedByUser, type PendingApproval } from './policy-errors.js'
import { consumedAs, markConsumed } from './policy-state.js'
import { type CompiledRule, compileRules, policyCodeRuleSchema, type RuleVerdict } from './rules.js'
import { peekSlots, RunSlots, type SlotTaker } from './run-slots.js'
import { settleWithin, TIMED_OUT } from './settle-within.js'

/** The longest an in-process approval may wait: the longest a JavaScript timer holds. */
const MAX_WAIT_MS = 2_147_483_647

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
  approvalTimeoutMs: z.number().int().min(1).max(MAX_WAIT_MS).default(300_000),
  /** How long a rule's async `when` may take; no answer in time denies the call. Default 10,000 ms. */
  whenTimeoutMs: z.number().int().min(1).max(MAX_WAIT_MS).default(10_000),
  /** Tell the model, in each restricted tool's description, what the policy restricts. Default true. */
  describe: z.boolean().default(true),
})

/** What {@link policy} accepts. */
export type PolicyOptions = z.input<typeof policyOptionsSchema>

type Decision =
  | { readonly action: 'pass' }
  | { readonly action: 'allow' | 'approve'; readonly rule: CompiledRule | undefined }
  | { readonly action: 'deny'; readonly rule: CompiledRule | undefined; readonly reason: string }

async function parsedArgs(tool: AnyTool, args: unknown): Promise<{ ok: true; args: unknown } | { ok: false }> {
  let parsed: z.ZodSafeParseResult<unknown>
  try {
    parsed = tool.input.safeParse(args)
  } catch {
    parsed = await tool.input.safeParseAsync(args)
  }
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false }
}

const argumentsText = (args: unknown) => sanitize(canonicalJson(args) ?? 'null', { maxLength: 2000 })

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

  function refused(ctx: ToolContext, rule: CompiledRule | undefined, reason: string): Decision {
    ctx.emit('policy.undecidable', { rule: rule?.id, reason })
    return { action: 'deny', rule, reason: `the call cannot be checked (${reason}), so it is refused` }
  }

  /** A rule's verdict on the call; an async `when` is waited for at most `whenTimeoutMs`, and only while the call stands. */
  async function verdictOf(ctx: ToolContext, rule: CompiledRule, args: unknown): Promise<RuleVerdict> {
    let verdict: RuleVerdict | typeof TIMED_OUT
    try {
      const answer = rule.conditions(args, ctx)
      verdict = answer instanceof Promise ? await settleWithin(ctx, answer, whenTimeoutMs) : answer
    } catch (err) {
      const signal = ctx.currentSignal()
      // A cancelled run ends the call as cancelled, not as a broken rule.
      if (signal.aborted) throw abortReason(signal)
      ctx.log.error({ err, rule: rule.id }, 'policy: a rule check threw; the call is denied')
      return { undecidable: `rule ${rule.id}'s check failed` }
    }
    if (verdict !== TIMED_OUT) return verdict
    ctx.log.error({ rule: rule.id, timeoutMs: whenTimeoutMs }, 'policy: a rule check did not answer in time; the call is denied')
    return { undecidable: `rule ${rule.id}'s check did not answer within ${whenTimeoutMs} ms` }
  }

  /** Decides the call; a `maxPerRun` slot is taken from `slots` the moment its rule is read, before any await. */
  async function decide(ctx: ToolContext, tool: AnyTool, slots: SlotTaker): Promise<Decision> {
    const applicable = rulesFor(tool)
    let args: unknown = ctx.call.args
    if (applicable.some((rule) => rule.needsArgs)) {
      const parsed = await parsedArgs(tool, args)
      // The terminal refuses these arguments with the tool's schema before anything runs.
      if (!parsed.ok) return { action: 'pass' }
      args = parsed.args
    }
    for (const rule of applicable) {
      const verdict = await verdictOf(ctx, rule, args)
      if (typeof verdict === 'object') return refused(ctx, rule, verdict.undecidable)
      if (verdict === 'no') continue
      if (rule.maxPerRun !== undefined && slots.take(rule.id, rule.maxPerRun)) continue
      if (rule.action === 'deny') return { action: 'deny', rule, reason: rule.reason ?? `rule ${rule.id} denies it` }
      return { action: rule.action, rule }
    }
    if (fallback === 'deny') return { action: 'deny', rule: undefined, reason: 'no rule allows it' }
    return { action: 'allow', rule: undefined }
  }

  function pending(ctx: ToolContext, rule: CompiledRule, problem?: string): PendingApproval {
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

  async function run(ctx: ToolContext, slots: RunSlots, next: Next, args?: unknown): Promise<void> {
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

  async function approve(ctx: ToolContext, tool: AnyTool, rule: CompiledRule, slots: RunSlots, next: Next): Promise<void> {
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
      return run(ctx, slots, next)
    }
    // A plain copy (readDecision): what is validated is what the tool receives.
    const edited = value.args
    const parsed = tool.input.safeParse(edited)
    consume(runContext, call.id, 'edit')
    if (!parsed.success) throw invalidArguments(tool, parsed.error)
    ctx.emit('policy.approved', { rule: rule.id, edited: true })
    return run(ctx, slots, next, edited)
  }

  function consume(runContext: RunContext, callId: string, as: 'approve' | 'deny' | 'edit'): void {
    markConsumed(runContext, callId, as)
  }

  async function decided(ctx: ToolContext, tool: AnyTool, slots: RunSlots, next: Next): Promise<void> {
    const decision = await decide(ctx, tool, slots)
    if (decision.action === 'pass') return next()
    if (decision.action === 'deny') {
      ctx.emit('policy.denied', { rule: decision.rule?.id, reason: decision.reason })
      throw blockedByPolicy(
        tool.name,
        decision.reason,
        decision.rule?.id ?? 'default',
        hintFor(decision.rule, tool, rulesFor(tool), fallback),
      )
    }
    if (decision.action === 'approve' && decision.rule !== undefined) return approve(ctx, tool, decision.rule, slots, next)
    if (decision.rule !== undefined) ctx.emit('policy.allowed', { rule: decision.rule.id })
    return run(ctx, slots, next)
  }

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
      return await decided(ctx, tool, slots, next)
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
      currentSignal: () => runContext.signal,
    } as unknown as ToolContext
    const decision = await decide(probe, tool, peekSlots(runContext))
    return decision.action === 'approve'
  }
  Object.defineProperty(layer, APPROVAL_CHECK, { value: check })
  return layer
}
