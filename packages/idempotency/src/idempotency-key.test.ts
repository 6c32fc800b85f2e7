import { scopeProblem } from '@shallot/core/kit'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { argsHashOf, derivedKey, keyProblem, storeKeyOf } from './idempotency-key.js'

/** The same object with its keys in a shuffled order, at every depth. */
function shuffled(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, i) => shuffled(item, seed + i))
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value)
  entries.sort(
    ([a], [b]) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || (seed % 2 === 0 ? a.localeCompare(b) : b.localeCompare(a)),
  )
  return Object.fromEntries(entries.map(([k, v]) => [k, shuffled(v, seed + 1)]))
}

const args = fc.jsonValue().filter((v) => typeof v === 'object' && v !== null)

describe('idempotency keys', () => {
  it('derive the same key whatever the order of the argument keys (property)', () => {
    fc.assert(
      fc.property(args, fc.integer({ min: 0, max: 1000 }), (value, seed) => {
        const a = derivedKey('s', 'run', 'tool', argsHashOf('tool', value))
        const b = derivedKey('s', 'run', 'tool', argsHashOf('tool', shuffled(value, seed)))
        expect(b).toBe(a)
        expect(keyProblem(a)).toBeUndefined()
      }),
    )
  })

  it('differ when scope, run, tool or arguments differ', () => {
    const hash = argsHashOf('tool', { a: 1 })
    const base = derivedKey('s', 'run', 'tool', hash)
    expect(
      new Set([
        base,
        derivedKey('t', 'run', 'tool', hash),
        derivedKey('s', 'run2', 'tool', hash),
        derivedKey('s', 'run', 'tool2', hash),
        derivedKey('s', 'run', 'tool', argsHashOf('tool', { a: 2 })),
      ]).size,
    ).toBe(5)
    expect(argsHashOf('tool', { a: 1 })).not.toBe(argsHashOf('other', { a: 1 }))
  })

  it('accept exactly the strings of 1 to 255 printable ASCII characters (property)', () => {
    const printable = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      minLength: 1,
      maxLength: 255,
    })
    fc.assert(
      fc.property(printable, (key) => {
        expect(keyProblem(key)).toBeUndefined()
      }),
    )
    fc.assert(
      fc.property(printable, fc.constantFrom('\n', '\t', '\u0000', '\u007f', 'é', '\u200b', '🔑'), fc.nat(), (key, bad, at) => {
        const short = key.slice(0, 253)
        const i = at % (short.length + 1)
        expect(keyProblem(`${short.slice(0, i)}${bad}${short.slice(i)}`)).toMatch(/printable ASCII/)
      }),
    )
    expect(keyProblem('')).toBe('is empty')
    expect(keyProblem('k'.repeat(256))).toContain('the limit is 255')
    expect(keyProblem(42)).toContain('must be a string')
  })

  it('keep scope and key recoverable in the store key, so two scopes never collide', () => {
    expect(scopeProblem('tenant:42')).toBeUndefined()
    expect(scopeProblem('has space')).toBeDefined()
    expect(scopeProblem('')).toBeDefined()
    fc.assert(
      fc.property(
        fc.stringMatching(/^[!-~]{1,20}$/),
        fc.stringMatching(/^[!-~]{1,20}$/),
        fc.stringMatching(/^[ -~]{1,40}$/),
        (s1, s2, key) => {
          fc.pre(s1 !== s2)
          expect(storeKeyOf(s1, key)).not.toBe(storeKeyOf(s2, key))
          expect(storeKeyOf(s1, key).slice(0, storeKeyOf(s1, key).indexOf(' '))).toBe(s1)
        },
      ),
    )
  })
})
