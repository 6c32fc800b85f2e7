import type { ErrorFacts } from './error-facts.js'
import type { ClassifierRule } from './rules.js'

/** A rule turned into a predicate once, at construction. `lowerText` is the lowercased message text, computed on demand. */
export type RuleMatcher = (facts: ErrorFacts, lowerText: () => string) => boolean

function list(value: string | readonly string[]): readonly string[] {
  return typeof value === 'string' ? [value] : value
}

function statusTest(status: NonNullable<ClassifierRule['match']['status']>): (status: number) => boolean {
  if (typeof status === 'number') return (s) => s === status
  if (typeof status === 'string') {
    const family = Number(status[0])
    return (s) => Math.floor(s / 100) === family
  }
  const set = new Set(status)
  return (s) => set.has(s)
}

/**
 * Compiles a rule's `match` into a predicate: every field given must match, a list matches any entry.
 *
 * @example
 * const matches = matchRule({ match: { status: '5xx' }, then: { code: 'upstream_error', category: 'transient' } })
 * matches(errorFacts({ status: 503 }), () => '') // true
 */
export function matchRule(rule: ClassifierRule): RuleMatcher {
  const tests: RuleMatcher[] = []
  const { status, code, name, type, messageIncludes } = rule.match
  if (status !== undefined) {
    const test = statusTest(status)
    tests.push((facts) => facts.status !== undefined && test(facts.status))
  }
  if (code !== undefined) {
    const codes = new Set(list(code))
    tests.push((facts) => facts.codes.some((c) => codes.has(c)))
  }
  if (name !== undefined) {
    const names = new Set(list(name))
    tests.push((facts) => facts.names.some((n) => names.has(n)))
  }
  if (type !== undefined) {
    const types = new Set(list(type))
    tests.push((facts) => facts.types.some((t) => types.has(t)))
  }
  if (messageIncludes !== undefined) {
    const needles = list(messageIncludes).map((needle) => needle.toLowerCase())
    tests.push((_facts, lowerText) => {
      const text = lowerText()
      return needles.some((needle) => text.includes(needle))
    })
  }
  return (facts, lowerText) => tests.every((test) => test(facts, lowerText))
}
