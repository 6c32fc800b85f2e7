import type { AnyTool, RunContext } from '@shallot/core'
import { countOf } from './policy-state.js'
import type { CompiledRule } from './rules.js'

const unconditional = (rule: CompiledRule) => !rule.needsArgs && rule.maxPerRun === undefined

function conditionText(rule: CompiledRule, run: RunContext | undefined): string {
  const parts = [...rule.predicates.map((p) => p.text), ...(rule.when === undefined ? [] : ['a custom check holds'])]
  if (rule.maxPerRun !== undefined) {
    const used = run === undefined ? undefined : Math.min(countOf(run, rule.id), rule.maxPerRun)
    parts.push(`after ${rule.maxPerRun} such calls in this run${used === undefined ? '' : ` (${used} used)`}`)
  }
  return parts.join(' and ')
}

/**
 * How the rules for one tool read in its description, in rule order, or `undefined` when nothing
 * restricts the tool (only allow rules and a default of allow).
 *
 * @example
 * describeRules(rules, 'allow', run) // 'Policy: blocked when amountCents > 10000 (over the limit); otherwise allowed.'
 */
export function describeRules(rules: readonly CompiledRule[], fallback: 'allow' | 'deny', run: RunContext): string | undefined {
  if (fallback === 'allow' && rules.every((rule) => rule.action === 'allow')) return undefined
  const parts: string[] = []
  let reachedEnd = true
  for (const rule of rules) {
    const when = conditionText(rule, run)
    const verb = rule.action === 'allow' ? 'allowed' : rule.action === 'deny' ? 'blocked' : "needs a person's approval"
    parts.push(`${verb}${when === '' ? '' : ` when ${when}`}${rule.reason === undefined ? '' : ` (${rule.reason})`}`)
    if (unconditional(rule)) {
      reachedEnd = false
      break
    }
  }
  if (reachedEnd) parts.push(`otherwise ${fallback === 'allow' ? 'allowed' : 'blocked'}`)
  return `Policy: ${parts.join('; ')}.`
}

/**
 * What the model reads as the hint of a refusal: the rule's own hint, or what the allow rules
 * before it would let through.
 *
 * @example
 * hintFor(denyRule, transfer, rules, 'allow') // 'allowed: transfer when amountCents <= 10000'
 */
export function hintFor(rule: CompiledRule | undefined, tool: AnyTool, rules: readonly CompiledRule[], fallback: 'allow' | 'deny'): string {
  if (rule?.hint !== undefined) return rule.hint
  if (rule?.maxPerRun !== undefined && !rule.needsArgs) {
    return `this run has used its ${rule.maxPerRun} calls of this kind; finish without it or ask the user`
  }
  const allowed = rules.filter((r) => r.action === 'allow' && r.needsArgs).map((r) => `${tool.name} when ${conditionText(r, undefined)}`)
  if (allowed.length > 0) return `allowed: ${allowed.join('; or ')}`
  if (fallback === 'deny' && rule === undefined) return `no rule allows '${tool.name}'; do without it or ask the user`
  return `'${tool.name}' is not allowed for this call; do without it or ask the user`
}
