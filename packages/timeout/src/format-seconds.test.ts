import { MAX_TIMER_MS } from '@shallot/core/kit'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatSeconds } from './format-seconds.js'

describe('formatSeconds', () => {
  it.each([
    [50, '0.05s'],
    [1, '0.001s'],
    [999, '0.999s'],
    [1000, '1s'],
    [1500, '1.5s'],
    [1234, '1.234s'],
    [2000, '2s'],
    [20_000, '20s'],
    [90_000, '90s'],
    [MAX_TIMER_MS, '2147483.647s'],
  ])('writes %i ms as %s', (ms, text) => {
    expect(formatSeconds(ms)).toBe(text)
  })

  it('reads back as the same number of milliseconds for every whole-millisecond deadline', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_TIMER_MS }), (ms) => {
        const text = formatSeconds(ms)
        expect(text).toMatch(/^\d+(\.\d{1,3})?s$/)
        expect(Math.round(Number(text.slice(0, -1)) * 1000)).toBe(ms)
      }),
    )
  })

  it('refuses a negative or non-finite duration', () => {
    expect(() => formatSeconds(-1)).toThrow(RangeError)
    expect(() => formatSeconds(Number.NaN)).toThrow(RangeError)
  })
})
