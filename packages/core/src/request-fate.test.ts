import { describe, expect, it } from 'vitest'
import { isTransientModelError } from './model-failure.js'
import { isConnectionFailure, REQUEST_FATES, requestFate } from './request-fate.js'

const factsOf = (row: (typeof REQUEST_FATES)[number]) =>
  row.code !== undefined ? { codes: [row.code] } : { status: row.status, retryAfter: row.retryAfter === true }

describe('requestFate: what each failure means for a write', () => {
  it.each(REQUEST_FATES.map((row) => [row.status ?? row.code, row.retryAfter, row.fate, row] as const))(
    '%s (Retry-After: %s) is %s',
    (_what, _retryAfter, fate, row) => {
      expect(requestFate(factsOf(row))).toBe(fate)
      expect(row.why.length).toBeGreaterThan(10)
    },
  )

  it('holds every row once: no status or code decided twice', () => {
    const keys = REQUEST_FATES.map((row) => `${row.status ?? row.code}/${row.retryAfter}`)
    expect(new Set(keys).size).toBe(keys.length)
  })

  it('treats a 503 as a 500 unless it says when to come back', () => {
    expect(requestFate({ status: 503, retryAfter: true })).toBe('not_processed')
    expect(requestFate({ status: 503, retryAfter: false })).toBe('unknown')
    expect(requestFate({ status: 503 })).toBe('unknown')
  })

  it('lets a status decide over the codes of its causes', () => {
    expect(requestFate({ status: 502, codes: ['ECONNREFUSED'] })).toBe('unknown')
    expect(requestFate({ status: 429, codes: ['ECONNRESET'] })).toBe('not_processed')
  })

  it('takes the safe side: any code that says the request may have left makes it unknown', () => {
    expect(requestFate({ codes: ['ECONNREFUSED', 'ECONNRESET'] })).toBe('unknown')
    expect(requestFate({ codes: ['ECONNREFUSED', 'SOMETHING_ELSE'] })).toBe('not_processed')
    expect(requestFate({ codes: ['SOMETHING_ELSE'] })).toBe('unknown')
  })

  it('answers unknown for what it does not know: no facts, other statuses, planted keys', () => {
    expect(requestFate({})).toBe('unknown')
    expect(requestFate({ codes: [] })).toBe('unknown')
    for (const status of [200, 301, 418, 500, 507, 599, -1, Number.NaN]) expect(requestFate({ status })).toBe('unknown')
    expect(requestFate({ codes: ['__proto__', 'constructor', 'toString'] })).toBe('unknown')
    expect(requestFate(JSON.parse('{"__proto__":{"status":429}}'))).toBe('unknown')
  })

  it('is frozen all the way down, so no caller can change what a failure means for everyone', () => {
    expect(Object.isFrozen(REQUEST_FATES)).toBe(true)
    for (const row of REQUEST_FATES) expect(Object.isFrozen(row)).toBe(true)
  })

  it('is the one list of connection failures: every code in it is a transient model failure, and nothing else is', () => {
    const codes = REQUEST_FATES.flatMap((row) => (row.code === undefined ? [] : [row.code]))
    expect(codes.length).toBeGreaterThan(20)
    for (const code of codes) {
      expect(isConnectionFailure(code)).toBe(true)
      expect(isTransientModelError(Object.assign(new Error(code), { code }))).toBe(true)
      // A code deep in the cause chain counts, as fetch wraps the socket's error.
      expect(isTransientModelError(new TypeError('fetch failed', { cause: { code } }))).toBe(true)
    }
    for (const code of ['ENOENT', 'EACCES', '__proto__', 'constructor', '', 'econnreset']) {
      expect(isConnectionFailure(code)).toBe(false)
      expect(isTransientModelError({ code })).toBe(false)
    }
  })
})
