import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { capText, TRUNCATION_MARKER } from './index.js'

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

describe('capText', () => {
  it('leaves text within the limit alone', () => {
    expect(capText('short', 5)).toBe('short')
  })

  it('cuts to exactly max characters, marker included', () => {
    expect(capText('abcdefghijklmnopqrstuvwxyz', 20)).toBe(`abcdefg${TRUNCATION_MARKER}`)
  })

  it('never exceeds max, keeps a prefix of the text, and never splits a surrogate pair (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 0, max: 400 }), (text, max) => {
        const capped = capText(text, max)
        expect(capped.length).toBeLessThanOrEqual(Math.max(max, 0))
        if (text.length <= max) expect(capped).toBe(text)
        else if (max >= TRUNCATION_MARKER.length) {
          expect(capped.endsWith(TRUNCATION_MARKER)).toBe(true)
          expect(text.startsWith(capped.slice(0, -TRUNCATION_MARKER.length))).toBe(true)
          expect(capped).not.toMatch(loneSurrogate)
        }
      }),
    )
  })
})
