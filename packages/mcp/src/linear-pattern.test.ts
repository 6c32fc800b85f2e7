import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { inputSchemaFromJson } from './input-schema-from-json.js'
import { isLinearPattern } from './linear-pattern.js'

describe('isLinearPattern', () => {
  it.each([
    '^[a-z0-9_]+$',
    '^ORD-\\d{4}-\\d{5}$',
    '^https?://\\S+$',
    '^(?:foo|bar)-\\w*$',
    '^[A-Z]{2,3}\\.[a-z]{1,8}$',
    '^[\\])]+$',
    '^a{2}$',
    '^(?<year>\\d{4})-\\d+$',
  ])('keeps %s', (source) => {
    expect(isLinearPattern(source)).toBe(true)
  })

  it.each([
    ['^(a+)+$', 'a quantified group (exponential)'],
    ['^(a|a)*$', 'a quantified alternation'],
    ['^(?:\\w+\\s?)*$', 'a quantified group of quantifiers'],
    ['a+b', 'no start anchor (quadratic)'],
    ['^a+$|b', 'an unanchored other branch'],
    ['^[a-z]+-[0-9]+$', 'two unbounded quantifiers'],
    ['^\\d*\\d*$', 'two overlapping unbounded quantifiers'],
    ['^(a)\\1+$', 'a backreference'],
    ['^(?<x>a)\\k<x>$', 'a named backreference'],
    ['^(?=a+)a$', 'a lookahead'],
    ['^(?<!b)a+$', 'a lookbehind'],
    ['^a{0,1000}b{0,1000}$', 'too many bounded combinations'],
    ['^a++$', 'a quantifier after a quantifier'],
    ['^[a-z', 'an unclosed class'],
    ['^(a', 'an unclosed group'],
    [`^${'a'.repeat(600)}$`, 'a source over 512 characters'],
  ])('refuses %s: %s', (source) => {
    expect(isLinearPattern(source)).toBe(false)
  })
})

describe('inputSchemaFromJson with patterns from a server', () => {
  it('leaves out a pattern that is not linear, keeps a linear one, and keeps "pattern" inside data', () => {
    const schema = inputSchemaFromJson({
      type: 'object',
      properties: {
        ref: { type: 'string', pattern: '^(a+)+$' },
        code: { type: 'string', pattern: '^ORD-\\d{4}$' },
        kind: { type: 'object', default: { pattern: '^(a+)+$' } },
      },
    })
    expect(schema.safeParse({ ref: `${'a'.repeat(27)}!` }).success).toBe(true)
    expect(JSON.stringify(z.toJSONSchema(schema))).toContain('"default":{"pattern":"^(a+)+$"}')
    expect(schema.safeParse({ code: 'ORD-1' }).success).toBe(false)
  })

  it('accepts any object when a patternProperties key is not linear (the server validates)', () => {
    const schema = inputSchemaFromJson({
      type: 'object',
      patternProperties: { '^(b+)+$': { type: 'number' } },
      additionalProperties: false,
    })
    expect(schema.safeParse({ [`${'b'.repeat(27)}!`]: 'x' }).success).toBe(true)
  })

  it('accepts any object for a schema nested over 64 levels, a __proto__ key or a throwing getter', () => {
    const deep = JSON.parse(`${'{"items":'.repeat(100)}{}${'}'.repeat(100)}`)
    expect(inputSchemaFromJson(deep).safeParse({ any: 1 }).success).toBe(true)
    const getter = {
      type: 'object',
      get properties(): never {
        throw new Error('boom')
      },
    }
    expect(inputSchemaFromJson(getter).safeParse({ any: 1 }).success).toBe(true)
    const proto = JSON.parse('{"type":"object","__proto__":{"required":["x"]}}')
    expect(inputSchemaFromJson(proto)).toBeInstanceOf(z.ZodType)
    expect(inputSchemaFromJson(proto).safeParse({}).success).toBe(true)
  })
})
