import { canonicalJson } from '@shallot/core/kit'
import { seededRandom } from '@shallot/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fingerprint } from './fingerprint.js'

/** The same value with the keys of every object in a different order. */
function reorder(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => reorder(item, random))
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value).map(([key, item]) => [key, reorder(item, random)] as const)
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const a = entries[i] as (typeof entries)[number]
    entries[i] = entries[j] as (typeof entries)[number]
    entries[j] = a
  }
  // fromEntries defines own properties, so a "__proto__" key stays a key.
  return Object.fromEntries(entries)
}

describe('fingerprint', () => {
  it('is the same for any order of keys, at every depth (property)', () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), fc.integer(), (tool, args, seed) => {
        expect(fingerprint(tool, reorder(args, seededRandom(seed)))).toBe(fingerprint(tool, args))
      }),
    )
  })

  it('is the same for arguments that only differ in JSON whitespace (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (args) => {
        expect(fingerprint('t', JSON.parse(JSON.stringify(args, null, 3)))).toBe(fingerprint('t', args))
      }),
    )
  })

  it('differs for arguments with different canonical JSON (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b))
        expect(fingerprint('t', a)).not.toBe(fingerprint('t', b))
      }),
    )
  })

  it('treats 1, 1.0 and 1e0 as the same number', () => {
    const one = fingerprint('t', JSON.parse('{"n":1}'))
    expect(fingerprint('t', JSON.parse('{"n":1.0}'))).toBe(one)
    expect(fingerprint('t', JSON.parse('{ "n" : 1e0 }'))).toBe(one)
    expect(fingerprint('t', { n: 1.5 })).not.toBe(one)
  })

  it('tells tools apart even when their arguments are equal', () => {
    expect(fingerprint('read_file', { path: 'a' })).not.toBe(fingerprint('write_file', { path: 'a' }))
  })

  it('does not confuse a string argument with the JSON it spells', () => {
    expect(fingerprint('t', '{"a":1}')).not.toBe(fingerprint('t', { a: 1 }))
  })
})
