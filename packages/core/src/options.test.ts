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
      'timeout(): option ms: Too small: expected number to be >0 (got -1); Unrecognized key: "nope"',
    )
  })

  it('returns the parsed options with their defaults', () => {
    expect(parseOptions('timeout()', schema, { ms: 10 })).toEqual({ ms: 10, tools: {} })
  })
})
