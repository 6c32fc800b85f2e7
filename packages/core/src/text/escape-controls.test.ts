import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { escapeControls } from '../kit.js'

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const OBEYED = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/

describe('escapeControls', () => {
  it('shows a terminal escape as text instead of letting the terminal obey it', () => {
    expect(escapeControls('done\x1b]0;pwned\x07\x1b[2J')).toBe('done\\x1b]0;pwned\\x07\\x1b[2J')
  })

  it('shows C1 controls, DEL, a carriage return and bidi overrides', () => {
    expect(escapeControls('a\x9b2Jb\x7f\rc\u202eevil\u2066')).toBe('a\\x9b2Jb\\x7f\\rc\\u202eevil\\u2066')
  })

  it('keeps newlines and tabs for multi-line text, and escapes them when the text promises one line', () => {
    expect(escapeControls('a\n\tb')).toBe('a\n\tb')
    expect(escapeControls('a\n\tb', { oneLine: true })).toBe('a\\n\\tb')
  })

  it('returns plain text unchanged, accents and emoji included', () => {
    const text = 'café ✓ 👩‍👩‍👧 “quoted”'
    expect(escapeControls(text)).toBe(text)
  })

  it('leaves nothing a terminal obeys, for any string (law)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const one = escapeControls(text, { oneLine: true })
        expect(one).not.toMatch(OBEYED)
        expect(one).not.toMatch(/[\n\t]/)
        const many = escapeControls(text)
        expect(many).not.toMatch(OBEYED)
        expect(many.split('\n')).toHaveLength(text.split('\n').length)
      }),
    )
  })
})
