import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { OptionsError, parseOptions } from './index.js'
import { optionsParser } from './kit.js'

const schema = z
  .object({
    ms: z.number().int().positive().default(1000),
    tools: z.record(z.string(), z.number().positive()).default({}),
    codes: z.array(z.string()).default(['timeout']),
  })
  .strict()

/** What a call gives: the parsed value, or the error's class and message. */
function outcome(parse: (input: unknown) => unknown, input: unknown): unknown {
  try {
    return { value: parse(input) }
  } catch (err) {
    return { error: (err as Error).constructor.name, message: (err as Error).message }
  }
}

describe('optionsParser', () => {
  it('gives what parseOptions gives, for any sequence of inputs, valid or not', () => {
    const input = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.record({ ms: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double(), fc.string()) }, { requiredKeys: [] }),
      fc.record({ tools: fc.dictionary(fc.string({ maxLength: 3 }), fc.integer({ min: -2, max: 2 })) }),
      fc.record({ codes: fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer())) }),
      fc.constantFrom('garbage', 42, [1, 2], { mss: 5 }),
    )
    fc.assert(
      fc.property(fc.array(input, { maxLength: 12 }), (inputs) => {
        const parse = optionsParser('layer()', schema)
        for (const value of inputs) expect(outcome(parse, value)).toEqual(outcome((v) => parseOptions('layer()', schema, v), value))
      }),
    )
  })

  it('checks an options object again on every call: one changed after it was accepted is refused', () => {
    const parse = optionsParser('layer()', schema)
    const options: { ms: number; tools?: Record<string, number> } = { ms: 50 }
    expect(parse(options).ms).toBe(50)
    options.ms = -1
    expect(() => parse(options)).toThrow(
      new OptionsError('layer()', [{ path: 'ms', message: 'Too small: expected number to be >0 (got -1)' }]),
    )
    options.ms = 70
    options.tools = { search: 0 }
    expect(() => parse(options)).toThrow(/^layer\(\): option tools\.search: .*\(got 0\)$/)
    delete options.tools
    expect(parse(options).ms).toBe(70)
  })

  it('checks frozen objects, keys named __proto__ and inherited options on every call too', () => {
    const parse = optionsParser('layer()', schema)
    const frozen = Object.freeze({ ms: 0 })
    for (let i = 0; i < 2; i++) {
      expect(() => parse(frozen)).toThrow(/^layer\(\): option ms: /)
      expect(() => parse(JSON.parse('{"__proto__": {"ms": 5}}'))).toThrow(/unknown option "__proto__"/)
      expect(() => parse(Object.create({ ms: -3 }))).toThrow(/option ms: .*\(got -3\)/)
    }
    expect(parse(Object.freeze({ ms: 9 })).ms).toBe(9)
  })

  it('gives every call without options its own defaults, so no caller can change what the next one gets', () => {
    const parse = optionsParser('layer()', schema)
    const first = parse(undefined)
    expect(first).toEqual({ ms: 1000, tools: {}, codes: ['timeout'] })
    ;(first as { ms: number }).ms = 1
    ;(first.codes as string[]).push('rate_limited')
    ;(first.tools as Record<string, number>).search = 1
    expect(parse(undefined)).toEqual({ ms: 1000, tools: {}, codes: ['timeout'] })
  })

  it('parses defaults that are not plain data afresh on every call', () => {
    const withFunction = z.object({ now: z.custom<() => number>((v) => typeof v === 'function').default(() => Date.now) }).strict()
    const parse = optionsParser('layer()', withFunction)
    const first = parse(undefined)
    expect(typeof first.now).toBe('function')
    ;(first as { now: unknown }).now = 'changed'
    expect(typeof parse(undefined).now).toBe('function')
  })
})
