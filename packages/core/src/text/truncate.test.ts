import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatPath, stripStackFrames, truncate } from '../kit.js'

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

describe('truncate', () => {
  it('leaves text within the limit alone', () => {
    expect(truncate('short', 5)).toBe('short')
  })

  it('cuts to at most max characters, marker included, saying how long the text was', () => {
    expect(truncate('x'.repeat(100), 40)).toBe(`${'x'.repeat(12)}… [truncated from 100 chars]`)
  })

  it('cuts on whitespace when some is near, so a token is dropped whole', () => {
    expect(truncate(`${'word '.repeat(4)}${'k'.repeat(100)}`, 60)).toBe('word word word word… [truncated from 120 chars]')
  })

  it('cuts without a marker when max is smaller than the marker', () => {
    expect(truncate('abcdefghij', 4)).toBe('abcd')
  })

  it('never exceeds max, keeps a prefix of the text, and never splits a surrogate pair (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 1, max: 400 }), (text, max) => {
        const cut = truncate(text, max)
        expect(cut.length).toBeLessThanOrEqual(max)
        if (text.length <= max) expect(cut).toBe(text)
        else {
          const body = cut.replace(/… \[truncated from \d+ chars\]$/, '')
          expect(text.startsWith(body)).toBe(true)
          expect(cut).not.toMatch(loneSurrogate)
        }
      }),
    )
  })
})

describe('formatPath', () => {
  it('writes a validation path the way code reads it', () => {
    expect(formatPath(['items', 2, 'sku'])).toBe('items[2].sku')
    expect(formatPath([])).toBe('(root)')
    expect(formatPath('not a path')).toBe('(root)')
  })

  it('shows at most ten segments of a hostile path', () => {
    expect(formatPath(Array.from({ length: 1000 }, () => 'a'))).toBe(`a${'.a'.repeat(9)}…`)
  })
})

describe('stripStackFrames', () => {
  it('drops V8 frame lines and keeps the rest', () => {
    expect(stripStackFrames('Error: boom\n    at f (file:///app/x.js:1:2)\n    at new Foo (<anonymous>)\n    at /app/y.js:10:4')).toBe(
      'Error: boom',
    )
    expect(stripStackFrames('one line')).toBe('one line')
  })
})
