import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { KEY_BYTES, KeyIndex } from './key-index.js'

// Prototype names, empty, past Latin-1, a lone surrogate, on both sides of a key slot, not strings.
const KEYS: unknown[] = [
  'a',
  'b',
  'c',
  'd',
  'e',
  '__proto__',
  '',
  'é',
  '日本',
  '\ud800',
  'k'.repeat(KEY_BYTES),
  'k'.repeat(KEY_BYTES + 1),
  `${'k'.repeat(KEY_BYTES - 1)}é`,
  42,
  Number.NaN,
  0,
  -0,
  undefined,
]

describe('KeyIndex', () => {
  for (const [name, hashMask] of [
    ['whole hashes', -1],
    ['one hash for every key, homed at the last slot (every run wraps round)', 0],
    ['hashes that cluster', 3],
  ] as const) {
    it(`finds exactly what a Map would through inserts, removals and growth, with ${name}`, () => {
      const key = fc.nat({ max: KEYS.length - 1 })
      const op = fc.oneof(
        fc.record({ op: fc.constant('insert' as const), key }),
        fc.record({ op: fc.constant('remove' as const), key }),
        fc.record({ op: fc.constant('grow' as const) }),
      )
      fc.assert(
        fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
          let records = 2
          const index = new KeyIndex(records, 7, hashMask)
          const model = new Map<unknown, number>()
          const free: number[] = []
          let used = 0
          for (const o of ops) {
            const k = 'key' in o ? KEYS[o.key] : undefined
            if (o.op === 'grow') {
              records *= 2
              index.grow(records)
            } else if (o.op === 'insert' && !model.has(k) && (free.length > 0 || used < records)) {
              const record = free.pop() ?? used++
              // Insert right after a miss, or after a miss and a growth (which moves the staged key), or cold.
              if (o.key % 2 === 0) expect(index.find(k)).toBe(-1)
              if (o.key % 4 === 0) {
                records *= 2
                index.grow(records)
              }
              index.insert(record, k)
              model.set(k, record)
            } else if (o.op === 'remove' && model.has(k)) {
              const record = model.get(k) as number
              index.remove(record)
              model.delete(k)
              free.push(record)
            }
            for (const each of KEYS) expect(index.find(each), String(each)).toBe(model.get(each) ?? -1)
          }
        }),
        { numRuns: 200 },
      )
    })
  }

  it('hashes a key the same way every time, by every UTF-16 code unit, and differently per seed', () => {
    const index = new KeyIndex(16, 42)
    expect(index.hashOf('default a')).toBe(index.hashOf(`default ${'a'}`))
    expect(index.hashOf('é')).not.toBe(index.hashOf('e\u0301'))
    expect(index.hashOf('\ud800')).not.toBe(index.hashOf('\udc00'))
    const keys = Array.from({ length: 1000 }, (_, i) => `default ${i}`)
    const other = new KeyIndex(16, 43)
    expect(keys.filter((k) => index.hashOf(k) === other.hashOf(k)).length).toBeLessThan(5)
    // The low bits pick the slot: keys that differ only in their last characters spread over them.
    expect(new Set(keys.map((k) => index.hashOf(k) & 1023)).size).toBeGreaterThan(550)
  })
})
