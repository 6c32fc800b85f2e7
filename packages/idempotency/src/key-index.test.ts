import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type KeyHash, KeyIndex, seededKeyHash } from './key-index.js'
import { TextColumn } from './text-column.js'

const KEYS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', '__proto__', '', 'é', '日本']

describe('KeyIndex', () => {
  for (const [name, hash] of [
    ['a seeded hash', seededKeyHash(7)],
    ['one hash for every key, at the last slot (every run wraps)', () => -1],
    ['hashes that cluster', (key: unknown) => String(key).length],
  ] as [string, KeyHash][]) {
    it(`finds exactly what a Map would through inserts, removals and growth, with ${name}`, () => {
      const op = fc.oneof(
        fc.record({ op: fc.constant('insert' as const), key: fc.nat({ max: KEYS.length - 1 }) }),
        fc.record({ op: fc.constant('remove' as const), key: fc.nat({ max: KEYS.length - 1 }) }),
        fc.record({ op: fc.constant('grow' as const) }),
      )
      fc.assert(
        fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
          let records = 2
          const index = new KeyIndex(records)
          const keys = new TextColumn(records)
          const model = new Map<string, number>()
          const free: number[] = []
          let used = 0
          for (const o of ops) {
            const key = 'key' in o ? (KEYS[o.key] as string) : ''
            if (o.op === 'grow') {
              records *= 2
              index.grow(records)
              keys.grow(records)
            } else if (o.op === 'insert' && !model.has(key) && (free.length > 0 || used < records)) {
              const record = free.pop() ?? used++
              keys.set(record, key)
              index.insert(record, hash(key))
              model.set(key, record)
            } else if (o.op === 'remove' && model.has(key)) {
              const record = model.get(key) as number
              index.remove(record)
              keys.clear(record)
              model.delete(key)
              free.push(record)
            }
            for (const k of KEYS) expect(index.find(hash(k), k, keys), k).toBe(model.get(k) ?? -1)
          }
        }),
        { numRuns: 200 },
      )
    })
  }
})
