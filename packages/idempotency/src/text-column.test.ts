import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TextColumn } from './text-column.js'

const SLOT = 24

const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))
const latin1 = fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c))
const text = fc.oneof(
  fc.string({ unit: latin1, maxLength: 30 }),
  fc.string({ unit, maxLength: 20 }),
  fc.constantFrom('', 'x'.repeat(SLOT), 'x'.repeat(SLOT + 1), 'x'.repeat(5000), '__proto__'),
)
const value = fc.oneof(
  { weight: 6, arbitrary: text },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, 0, -0, Number.NaN, 42, {}) },
)

type Op =
  | { op: 'set'; record: number; value: unknown }
  | { op: 'join'; record: number; parts: [string, string, string] }
  | { op: 'clear'; record: number }
  | { op: 'grow' }

describe('TextColumn', () => {
  it('holds exactly what an array of texts would, through replacements, clears and growth, whatever fits its slots', () => {
    const record = fc.nat({ max: 15 })
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ op: fc.constant('set' as const), record, value }) },
      { weight: 3, arbitrary: fc.record({ op: fc.constant('join' as const), record, parts: fc.tuple(text, text, text) }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('clear' as const), record }) },
      { weight: 1, arbitrary: fc.constant({ op: 'grow' as const }) },
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        let records = 4
        const column = new TextColumn(records, SLOT)
        const model: unknown[] = []
        for (const o of ops) {
          if (o.op === 'grow') {
            records *= 2
            column.grow(records)
            continue
          }
          const at = o.record % records
          if (o.op === 'set') {
            column.set(at, o.value)
            model[at] = o.value
          } else if (o.op === 'join') {
            column.setJoined(at, ...o.parts)
            model[at] = o.parts.join('')
          } else {
            column.clear(at)
            model[at] = undefined
          }
          for (let r = 0; r < records; r++) {
            expect(column.get(r)).toStrictEqual(model[r])
            expect(column.equals(r, model[r])).toBe(true)
            // Different by one character at the end, or a string where the model holds a number.
            if (typeof model[r] === 'string') expect(column.equals(r, `${model[r]}\u0000`)).toBe(false)
            else expect(column.equals(r, String(model[r]))).toBe(false)
          }
        }
      }),
      { numRuns: 200 },
    )
  })

  it('reads every text back after a million replacements in a column of 10,000 records', () => {
    const column = new TextColumn(10_000, 64)
    for (let i = 0; i < 1_000_000; i++) column.set(i % 10_000, `default ${i.toString(16).padStart(32, '0')}`)
    for (let r = 0; r < 10_000; r += 99) expect(column.get(r)).toBe(`default ${(990_000 + r).toString(16).padStart(32, '0')}`)
  })
})
