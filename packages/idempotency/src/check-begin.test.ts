import { describe, expect, it } from 'vitest'
import { checkBegin, newToken } from './check-begin.js'

describe('newToken', () => {
  it('gives the token of exactly the answers checkBegin reads as new', () => {
    const answers: unknown[] = [
      { status: 'new', token: 'm1' },
      { status: 'new', token: '' },
      { status: 'new', token: 7 },
      { status: 'new' },
      { status: 'done', result: {} },
      { status: 'in_flight' },
      { status: 'NEW', token: 'm1' },
      null,
      'new',
      undefined,
    ]
    for (const answer of answers) {
      const checked = checkBegin(answer)
      expect(newToken(answer)).toBe(checked.status === 'new' ? checked.token : undefined)
    }
    expect(newToken({ status: 'new', token: 'm1' })).toBe('m1')
  })
})
