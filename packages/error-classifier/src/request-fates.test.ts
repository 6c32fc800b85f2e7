// biome-ignore-all lint/suspicious/noThenProperty: rules are { match, then } (docs/errors.md); `then` is data, never callable
import { REQUEST_FATES } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { classify } from './classify.js'
import { CERTIFICATE_CODES } from './model-run-ending.js'

// Each row of core's table as a tool would throw it: a status (with or without Retry-After) or a fetch failure whose cause has the code.
function thrownFor(row: (typeof REQUEST_FATES)[number]): unknown {
  if (row.code !== undefined)
    return new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${row.code}`), { code: row.code }) })
  const headers = row.retryAfter === true ? { 'retry-after': '2' } : {}
  return Object.assign(new Error(`HTTP ${row.status}`), { status: row.status, headers })
}

describe('errorClassifier reads safeToRepeat from the one table (decision 405)', () => {
  it.each(REQUEST_FATES.map((row) => [row.status ?? row.code, row.retryAfter, row.fate, row] as const))(
    '%s (Retry-After: %s): %s',
    (_what, _retryAfter, fate, row) => {
      expect(classify(thrownFor(row)).safeToRepeat).toBe(fate === 'not_processed')
    },
  )

  it('classifies every code of the table as a network error, or a certificate error that will not heal, never as a bug in the tool', () => {
    for (const row of REQUEST_FATES.filter((r) => r.code !== undefined)) {
      const classified = classify(thrownFor(row))
      if (CERTIFICATE_CODES.includes(row.code as string)) expect(classified).toMatchObject({ code: 'certificate_error', retryable: false })
      else expect(classified).toMatchObject({ code: 'network_error', retryable: true })
    }
  })

  it('lets a rule that says safeToRepeat overrule the table', () => {
    const rules = [{ match: { status: 500 }, then: { code: 'flaky', category: 'transient' as const, safeToRepeat: true } }]
    expect(classify(Object.assign(new Error('x'), { status: 500 }), { rules }).safeToRepeat).toBe(true)
    const strict = [{ match: { status: 429 }, then: { code: 'slow_down', category: 'transient' as const, safeToRepeat: false } }]
    expect(classify(Object.assign(new Error('x'), { status: 429 }), { rules: strict }).safeToRepeat).toBe(false)
  })

  it('reads a Retry-After that cannot be parsed as none: the 503 stays unknown', () => {
    const garbled = Object.assign(new Error('busy'), { status: 503, headers: { 'retry-after': 'soon-ish' } })
    expect(classify(garbled).safeToRepeat).toBe(false)
  })
})
