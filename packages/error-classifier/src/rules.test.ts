// biome-ignore-all lint/suspicious/noThenProperty: classifier rules are { match, then } data
import { describe, expect, it } from 'vitest'
import { errorFacts } from './error-facts.js'
import { builtinRules, classify } from './index.js'
import { matchRule } from './match-rule.js'
import { classifierRuleSchema, classifierRulesSchema } from './rules.js'

describe('classification rules', () => {
  it('are valid data under the exported schema, each with a unique id', () => {
    expect(classifierRulesSchema.safeParse(builtinRules).success).toBe(true)
    const ids = builtinRules.map((rule) => rule.id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('cannot be changed behind the classifiers that share them: the table is frozen all the way down', () => {
    const rule = (id: string) => builtinRules.find((r) => r.id === id) as (typeof builtinRules)[number]
    expect(() => {
      ;(rule('http_429').then as { code: string }).code = 'ok'
    }).toThrow(TypeError)
    expect(() => {
      ;(rule('http_429').match as { status: number }).status = 200
    }).toThrow(TypeError)
    expect(() => (rule('quota_code').match.code as string[]).push('ECONNRESET')).toThrow(TypeError)
    expect(classify({ status: 429 }).code).toBe('rate_limited')
  })

  it('refuses what config files get wrong, naming the path', () => {
    const bad = classifierRuleSchema.safeParse({ match: { status: 99 }, then: { code: 'Bad Code', category: 'oops', extra: 1 } })
    expect(bad.success).toBe(false)
    const paths = bad.error?.issues.map((issue) => issue.path.join('.'))
    expect(paths).toEqual(expect.arrayContaining(['match.status', 'then.code', 'then.category', 'then']))
    expect(classifierRuleSchema.safeParse({ match: { status: '6xx' }, then: { code: 'x', category: 'user' } }).success).toBe(false)
    expect(classifierRuleSchema.safeParse({ match: { code: [] }, then: { code: 'x', category: 'user' } }).success).toBe(false)
  })

  it('match every field given, any entry of a list, and a status family', () => {
    const rule = matchRule({ match: { status: '5xx', code: ['A', 'B'] }, then: { code: 'x', category: 'transient' } })
    const text = () => ''
    expect(rule(errorFacts({ status: 502, code: 'B' }), text)).toBe(true)
    expect(rule(errorFacts({ status: 502, code: 'C' }), text)).toBe(false)
    expect(rule(errorFacts({ status: 404, code: 'A' }), text)).toBe(false)
    const empty = matchRule({ match: {}, then: { code: 'x', category: 'transient' } })
    expect(empty(errorFacts('anything'), text)).toBe(true)
  })
})
