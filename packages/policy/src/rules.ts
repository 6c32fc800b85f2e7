import { type AnyTool, TOOL_EFFECTS, type ToolContext, type ToolEffect } from '@shallot/core'
import { hashOf } from '@shallot/core/kit'
import { z } from 'zod'
import { argPredicateSchema, type CompiledPredicate, compilePredicate } from './predicates.js'

const EFFECTS = TOOL_EFFECTS
const toolPattern = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_.:*?-]+$/, 'must be a tool name, or a glob of one with * and ?')
const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(200)])

/**
 * A rule as data, the form a config file writes. A rule matches a call when every condition it
 * gives holds: the tool's name (exact or glob), its effect, each argument predicate, and, with
 * `maxPerRun: N`, that N calls meeting its other conditions already went through in this run.
 * The first matching rule decides: `allow` lets the call through, `deny` refuses it with a soft
 * `blocked_by_policy`, `approve` asks a human first.
 *
 * @example
 * policyRuleSchema.parse({ action: 'deny', effect: 'write', maxPerRun: 5, reason: 'at most 5 writes per run' })
 */
export const policyRuleSchema = z.strictObject({
  /** Names the rule in events, errors and run state. Default `rule-<position>`; give one to rules with `maxPerRun` so a reordered file keeps its counts. */
  id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 letters, digits, _ . or -')
    .optional(),
  action: z.enum(['allow', 'deny', 'approve']),
  /** Tool names or globs (`*`, `?`); any tool when left out. */
  tools: oneOrMany(toolPattern).optional(),
  /** Only tools of this effect (or these effects). */
  effect: oneOrMany(z.enum(EFFECTS)).optional(),
  /** Argument predicates that must all hold. */
  args: z.array(argPredicateSchema).min(1).max(50).optional(),
  /** The rule applies only once this many calls that meet its other conditions went through in this run. */
  maxPerRun: z.number().int().min(0).max(1_000_000).optional(),
  /** Why, in words the model (and the human who approves) reads. */
  reason: z.string().min(1).max(500).optional(),
  /** What a call that would pass looks like; generated from the allow rules when left out. */
  hint: z.string().min(1).max(500).optional(),
})

/** A check written in code: receives the call's parsed arguments and the context. May be async; a throw denies the call. */
export type PolicyCheck = (args: unknown, ctx: ToolContext) => boolean | Promise<boolean>

const check = z.custom<PolicyCheck>((v) => typeof v === 'function', { message: 'must be a function (args, ctx) => boolean' })

/**
 * A rule in code: the data form plus `when`, a function of the parsed arguments.
 *
 * @example
 * policyCodeRuleSchema.parse({ action: 'deny', tools: 'refund', when: (args) => (args as { orderId: string }).orderId.startsWith('X') })
 */
export const policyCodeRuleSchema = policyRuleSchema.extend({ when: check.optional() })

export type PolicyRule = z.input<typeof policyCodeRuleSchema>
export type PolicyAction = 'allow' | 'deny' | 'approve'

/** What evaluating one rule on one call says. */
export type RuleVerdict = 'matches' | 'no' | { readonly undecidable: string }

/** A rule compiled once at construction. */
export interface CompiledRule {
  readonly id: string
  readonly action: PolicyAction
  readonly reason: string | undefined
  readonly hint: string | undefined
  readonly maxPerRun: number | undefined
  readonly predicates: readonly CompiledPredicate[]
  readonly when: PolicyCheck | undefined
  /** Whether the rule looks at arguments (so the layer parses them). */
  readonly needsArgs: boolean
  /** Name and effect only: whether the rule can apply to this tool at all. */
  appliesTo(tool: AnyTool): boolean
  /** Every condition but the run-state count. */
  conditions(args: unknown, ctx: ToolContext): RuleVerdict | Promise<RuleVerdict>
  /** The conditions, as a model reads them. */
  readonly text: string
  /**
   * A digest of the rule as configured (canonical JSON: key order, whitespace and a single tool
   * written without a list do not count; a `when` counts by its source text). An approval records
   * the fingerprint of the rule that asked for it, and stands on resume only while it is the same.
   */
  readonly fingerprint: string
}

/** The rule as configured, in one form: what its fingerprint digests. A generated id (`rule-<position>`) is not part of it. */
function fingerprintOf(rule: z.output<typeof policyCodeRuleSchema>): string {
  const { when, tools, effect, ...data } = rule
  // Tools and effects are sets (a call matches any one): their order and repeats do not count. Predicates keep their order, which decides which one is reported.
  const asSet = <T extends string>(value: T | readonly T[]) => [...new Set(arrayOf(value))].sort()
  return hashOf({
    ...data,
    ...(tools === undefined ? {} : { tools: asSet(tools) }),
    ...(effect === undefined ? {} : { effect: asSet(effect) }),
    // Function.prototype.toString: a `when` cannot pose as another by overriding its own toString, and a Proxy reads without throwing.
    ...(when === undefined ? {} : { when: Function.prototype.toString.call(when) }),
  })
}

function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\-]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.')
  return new RegExp(`^${source}$`)
}

const arrayOf = <T>(value: T | readonly T[] | undefined): readonly T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? (value as readonly T[]) : [value as T]

function afterPredicates(
  verdict: RuleVerdict,
  when: PolicyCheck | undefined,
  args: unknown,
  ctx: ToolContext,
): RuleVerdict | Promise<RuleVerdict> {
  if (verdict !== 'matches' || when === undefined) return verdict
  const answer = when(args, ctx)
  const decide = (value: unknown): RuleVerdict =>
    value === true ? 'matches' : value === false ? 'no' : { undecidable: `its check returned ${typeof value}, not a boolean` }
  return typeof (answer as Promise<boolean> | null)?.then === 'function' ? Promise.resolve(answer).then(decide) : decide(answer)
}

/**
 * Compiles validated rules: globs to regular expressions, predicates to tests.
 *
 * @example
 * const [rule] = compileRules([{ action: 'deny', tools: 'delete_*' }])
 */
export function compileRules(rules: readonly z.output<typeof policyCodeRuleSchema>[]): CompiledRule[] {
  return rules.map((rule, index) => {
    const names = arrayOf(rule.tools)?.map(globToRegExp)
    const effects = arrayOf(rule.effect) as readonly ToolEffect[] | undefined
    const predicates = (rule.args ?? []).map(compilePredicate)
    const when = rule.when
    const parts = [
      ...predicates.map((p) => p.text),
      ...(when === undefined ? [] : ['a custom check holds']),
      ...(rule.maxPerRun === undefined ? [] : [`after ${rule.maxPerRun} such calls in this run`]),
    ]
    return {
      id: rule.id ?? `rule-${index + 1}`,
      action: rule.action,
      reason: rule.reason,
      hint: rule.hint,
      maxPerRun: rule.maxPerRun,
      predicates,
      when,
      needsArgs: predicates.length > 0 || when !== undefined,
      text: parts.join(' and '),
      fingerprint: fingerprintOf(rule),
      appliesTo(tool) {
        return (names === undefined || names.some((re) => re.test(tool.name))) && (effects === undefined || effects.includes(tool.effect))
      },
      conditions(args, ctx) {
        for (const predicate of predicates) {
          const verdict = predicate.test(args)
          if ('undecidable' in verdict) return { undecidable: `argument ${predicate.arg} ${verdict.undecidable}` }
          if (!verdict.holds) return 'no'
        }
        return afterPredicates('matches', when, args, ctx)
      },
    }
  })
}
