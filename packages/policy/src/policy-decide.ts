import { type AnyTool, abortReason, type ToolContext } from '@shallot/core'
import type { z } from 'zod'
import type { OnApproval } from './approval.js'
import type { CompiledRule, RuleVerdict } from './rules.js'
import type { SlotTaker } from './run-slots.js'
import { settleWithin, TIMED_OUT } from './settle-within.js'

/** What every call of one `policy()` layer shares: its rules by tool and its checked options. */
export interface PolicyLayer {
  /** The rules that apply to a tool, in order (kept per tool). */
  readonly rulesFor: (tool: AnyTool) => readonly CompiledRule[]
  /** What happens to a call no rule matches. */
  readonly fallback: 'allow' | 'deny'
  readonly onApproval: OnApproval | undefined
  readonly approvalTimeoutMs: number
  readonly whenTimeoutMs: number
}

export type Decision =
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

function refused(ctx: ToolContext, rule: CompiledRule | undefined, reason: string): Decision {
  ctx.emit('policy.undecidable', { rule: rule?.id, reason })
  return { action: 'deny', rule, reason: `the call cannot be checked (${reason}), so it is refused` }
}

/** A rule's verdict on the call; an async `when` is waited for at most `whenTimeoutMs`, and only while the call stands. */
async function verdictOf(layer: PolicyLayer, ctx: ToolContext, rule: CompiledRule, args: unknown): Promise<RuleVerdict> {
  const { whenTimeoutMs } = layer
  let verdict: RuleVerdict | typeof TIMED_OUT
  try {
    const answer = rule.conditions(args, ctx)
    verdict = answer instanceof Promise ? await settleWithin(ctx, answer, whenTimeoutMs) : answer
  } catch (err) {
    const signal = ctx.signal
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
export async function decide(layer: PolicyLayer, ctx: ToolContext, tool: AnyTool, slots: SlotTaker): Promise<Decision> {
  const applicable = layer.rulesFor(tool)
  let args: unknown = ctx.call.args
  if (applicable.some((rule) => rule.needsArgs)) {
    const parsed = await parsedArgs(tool, args)
    // The terminal refuses these arguments with the tool's schema before anything runs.
    if (!parsed.ok) return { action: 'pass' }
    args = parsed.args
  }
  for (const rule of applicable) {
    const verdict = await verdictOf(layer, ctx, rule, args)
    if (typeof verdict === 'object') return refused(ctx, rule, verdict.undecidable)
    if (verdict === 'no') continue
    if (rule.maxPerRun !== undefined && slots.take(rule.id, rule.maxPerRun)) continue
    if (rule.action === 'deny') return { action: 'deny', rule, reason: rule.reason ?? `rule ${rule.id} denies it` }
    return { action: rule.action, rule }
  }
  if (layer.fallback === 'deny') return { action: 'deny', rule: undefined, reason: 'no rule allows it' }
  return { action: 'allow', rule: undefined }
}
