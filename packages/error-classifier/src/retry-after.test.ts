import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseRetryAfter, parseRetryAfterMs, retryAfterFromHeaders } from './retry-after.js'

const now = Date.parse('Wed, 21 Oct 2026 07:28:00 GMT')
const maxMs = 60_000

describe('parseRetryAfter', () => {
  it.each([
    ['7', 7000],
    ['0', 0],
    [' 12 ', 12_000],
    ['1.5', 1500],
    ['120', 60_000],
    ['99999999999999', 60_000],
  ])('reads %j seconds as %i ms, clamped to the cap', (value, expected) => {
    expect(parseRetryAfter(value, { now, maxMs })).toBe(expected)
  })

  it.each([
    ['IMF-fixdate', 'Wed, 21 Oct 2026 07:28:30 GMT'],
    ['RFC 850', 'Wednesday, 21-Oct-26 07:28:30 GMT'],
    ['asctime', 'Wed Oct 21 07:28:30 2026'],
  ])('reads an HTTP date (%s) relative to now', (_format, value) => {
    // asctime carries no zone and is read as local time; compare against the same reading.
    const expected = Date.parse(value) - now
    expect(parseRetryAfter(value, { now, maxMs })).toBe(Math.min(expected, maxMs))
  })

  it('clamps a date a year out to the cap', () => {
    expect(parseRetryAfter('Thu, 21 Oct 2027 07:28:00 GMT', { now, maxMs })).toBe(60_000)
    expect(parseRetryAfter('Thu, 21 Oct 2027 07:28:00 GMT', { now, maxMs: 2500 })).toBe(2500)
  })

  it.each(['-1', 'abc', '1e309', '', '12abc', 'Infinity', 'NaN', '0x10', 'Tue, 20 Oct 2026 07:28:00 GMT', 'Wed, 21 Oct 2026 07:28:00 GMT'])(
    'ignores %j',
    (value) => {
      expect(parseRetryAfter(value, { now, maxMs })).toBeUndefined()
    },
  )

  it('reads numbers as seconds and ignores what is not a string or number', () => {
    expect(parseRetryAfter(3, { now, maxMs })).toBe(3000)
    expect(parseRetryAfter(-3, { now, maxMs })).toBeUndefined()
    expect(parseRetryAfter(Number.POSITIVE_INFINITY, { now, maxMs })).toBeUndefined()
    expect(parseRetryAfter(null, { now, maxMs })).toBeUndefined()
    expect(parseRetryAfter(['7'], { now, maxMs })).toBeUndefined()
  })

  it('never returns a wait outside [0, maxMs], whatever the header says', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.double(),
          fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
        ),
        fc.integer({ min: 0, max: 86_400_000 }),
        (value, cap) => {
          const ms = parseRetryAfter(value, { now, maxMs: cap })
          return ms === undefined || (Number.isInteger(ms) && ms >= 0 && ms <= cap)
        },
      ),
    )
  })
})

describe('parseRetryAfterMs', () => {
  it('reads milliseconds, clamped, and ignores anything else', () => {
    expect(parseRetryAfterMs('1500', maxMs)).toBe(1500)
    expect(parseRetryAfterMs('1500.2', maxMs)).toBe(1501)
    expect(parseRetryAfterMs('900000', maxMs)).toBe(60_000)
    expect(parseRetryAfterMs('-1', maxMs)).toBeUndefined()
    expect(parseRetryAfterMs('soon', maxMs)).toBeUndefined()
    expect(parseRetryAfterMs(undefined, maxMs)).toBeUndefined()
  })
})

describe('retryAfterFromHeaders: the one Retry-After parser (decision 510)', () => {
  const at = { now, maxMs }

  it.each([
    ['a Headers object', new Headers({ 'retry-after': '7' }), 7000],
    ['a record, any case', { 'Retry-After': '7' }, 7000],
    ['retry-after-ms first', { 'retry-after-ms': '1500', 'retry-after': '2' }, 1500],
    ['retry-after when retry-after-ms is unusable', { 'retry-after-ms': 'soon', 'retry-after': '1' }, 1000],
    ['an HTTP date', { 'retry-after': 'Wed, 21 Oct 2026 07:28:04 GMT' }, 4000],
    ['a number longer than any wait, clamped', { 'retry-after-ms': '9'.repeat(400) }, maxMs],
    ['an hour, clamped', { 'retry-after': '3600' }, maxMs],
    ['the first of a header list', { 'retry-after': ['3', '9'] }, 3000],
  ])('reads %s', (_label, headers, expected) => {
    expect(retryAfterFromHeaders(headers, at)).toBe(expected)
  })

  it.each([
    ['no headers', undefined],
    ['null', null],
    ['a string', 'retry-after: 7'],
    ['a date already past', { 'retry-after': 'Tue, 20 Oct 2026 07:28:00 GMT' }],
    ['a negative', { 'retry-after': '-5' }],
    ['an exponent', { 'retry-after': '1e3' }],
    ['hex', { 'retry-after-ms': '0x10' }],
    ['an empty value', { 'retry-after': '', 'retry-after-ms': '' }],
    ['__proto__ as a key', JSON.parse('{"__proto__": {"retry-after": "7"}}')],
    [
      'a get() that throws',
      {
        get: () => {
          throw new Error('boom')
        },
      },
    ],
  ])('answers undefined for %s', (_label, headers) => {
    expect(retryAfterFromHeaders(headers, at)).toBeUndefined()
  })

  it('never answers outside [0, maxMs] whatever the headers hold', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('retry-after', 'Retry-After-Ms', 'x'), fc.string()),
        fc.integer({ min: 0, max: 86_400_000 }),
        (headers, cap) => {
          const ms = retryAfterFromHeaders(headers, { now, maxMs: cap })
          return ms === undefined || (Number.isInteger(ms) && ms >= 0 && ms <= cap)
        },
      ),
    )
  })
})
