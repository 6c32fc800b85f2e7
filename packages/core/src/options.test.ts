import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { OptionsError, parseOptions } from './index.js'

const schema = z.object({ ms: z.number().positive(), tools: z.record(z.string(), z.number()).default({}) }).strict()

describe('parseOptions', () => {
  it('names each bad option with the value it got and what is allowed', () => {
    expect(() => parseOptions('timeout()', schema, { ms: Number.NaN })).toThrow(/^timeout\(\): option ms: .*\(got NaN\)$/)
    expect(() => parseOptions('timeout()', schema, { ms: 5, tools: { charge_card: 'slow' } })).toThrow(
      /option tools\.charge_card: .*\(got "slow"\)/,
    )
  })

  it('names an unknown key without printing the whole options object', () => {
    let error: unknown
    try {
      parseOptions('timeout()', schema, { ms: -1, nope: 1 })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(OptionsError)
    expect((error as OptionsError).message).toBe(
      'timeout(): option ms: Too small: expected number to be >0 (got -1); unknown option "nope"; known options: ms, tools',
    )
  })

  it('suggests the nearest accepted key for a misspelt one', () => {
    expect(() => parseOptions('timeout()', schema, { millis: 5 })).toThrow(/^timeout\(\): unknown option "millis"; did you mean 'ms'\?$/)
    expect(() => parseOptions('timeout()', schema, { ms: 5, tols: {} })).toThrow(
      new OptionsError('timeout()', [{ path: '', message: `unknown option "tols"; did you mean 'tools'?` }]),
    )
  })

  it('suggests keys of nested objects through optional, default, record, array and union wrappers', () => {
    const nested = z
      .object({
        backoff: z.object({ baseMs: z.number(), capMs: z.number() }).strict().optional(),
        perTool: z.record(z.string(), z.object({ attempts: z.number() }).strict()).default({}),
        rules: z.array(z.union([z.object({ match: z.string() }).strict(), z.object({ status: z.number() }).strict()])).optional(),
      })
      .strict()
    const message = (input: unknown) => {
      try {
        parseOptions('retry()', nested, input)
      } catch (err) {
        return (err as OptionsError).message
      }
      return 'no error'
    }
    expect(message({ backoff: { baseMs: 1, capMs: 2, bseMs: 3 } })).toBe(
      `retry(): option backoff: unknown option "bseMs"; did you mean 'baseMs'?`,
    )
    expect(message({ perTool: { search: { attempts: 1, attempt: 2 } } })).toBe(
      `retry(): option perTool.search: unknown option "attempt"; did you mean 'attempts'?`,
    )
    expect(message({ rules: [{ match: 'x', stauts: 1 }] })).toContain(`option rules[0]: unknown option "stauts"; did you mean 'status'?`)
  })

  it('lists every unknown key, and names the known ones when nothing is close', () => {
    const error = (() => {
      try {
        parseOptions('timeout()', schema, JSON.parse('{"ms":1,"zzzzzz":1,"__proto__":{"polluted":true},"constructor":1}'))
      } catch (err) {
        return err as OptionsError
      }
      throw new Error('expected an OptionsError')
    })()
    expect(error.issues.map((i) => i.message)).toEqual([
      'unknown option "zzzzzz"; known options: ms, tools',
      'unknown option "__proto__"; known options: ms, tools',
      'unknown option "constructor"; known options: ms, tools',
    ])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('returns the parsed options with their defaults', () => {
    expect(parseOptions('timeout()', schema, { ms: 10 })).toEqual({ ms: 10, tools: {} })
  })
})
