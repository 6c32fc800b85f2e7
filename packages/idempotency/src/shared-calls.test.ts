import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type InFlight, inFlight, SharedCalls } from './shared-calls.js'

describe('SharedCalls', () => {
  it('answers every get exactly as a Map would, whatever the order of sets and deletes', () => {
    const key = fc.constantFrom('default a', 'default b', 'default c', 'tenant a', '')
    const op = fc.oneof(
      fc.record({ op: fc.constant('set' as const), key }),
      fc.record({ op: fc.constant('delete' as const), key }),
      fc.record({ op: fc.constant('get' as const), key }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const calls = new SharedCalls()
        const model = new Map<string, InFlight>()
        for (const { op, key } of ops) {
          if (op === 'set') {
            const flight = inFlight()
            calls.set(key, flight)
            model.set(key, flight)
          } else if (op === 'delete') {
            calls.delete(key)
            model.delete(key)
          }
          for (const k of ['default a', 'default b', 'default c', 'tenant a', '']) expect(calls.get(k)).toBe(model.get(k))
        }
      }),
    )
  })
})
