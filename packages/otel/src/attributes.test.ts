import { expect, it } from 'vitest'
import { ClockTime, eventAttributes, sanitizerOf } from './attributes.js'

it('drops a field whose getter throws and keeps the others', () => {
  const fields = { kept: 1 }
  Object.defineProperty(fields, 'getter', {
    enumerable: true,
    get() {
      throw new Error('boom')
    },
  })
  expect(eventAttributes(fields, sanitizerOf([]))).toEqual({ kept: 1 })
})

it('leaves out the fields the span already carries, and functions and symbols', () => {
  const out = eventAttributes({ type: 't', at: 5, runId: 'r', callId: 'c', tool: 'x', f: () => 1, s: Symbol('s'), n: 10n }, sanitizerOf([]))
  expect({ ...out }).toEqual({ n: '10' })
})

it('maps clock time onto epoch time once per clock, keeping differences', () => {
  const time = new ClockTime()
  let now = 1_000
  const clock = { now: () => now }
  const [s0, ns0] = time.at(clock)
  now += 2_500
  const [s1, ns1] = time.at(clock)
  expect(s1 * 1000 + ns1 / 1e6 - (s0 * 1000 + ns0 / 1e6)).toBeCloseTo(2_500, 3)
})
