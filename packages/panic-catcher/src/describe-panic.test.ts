import { describe, expect, it } from 'vitest'
import { describePanic, UNKNOWN_PAYLOAD } from './describe-panic.js'

describe('describePanic', () => {
  it('tells the kinds of payload apart for the log', () => {
    expect(describePanic(new Error('x')).payload).toBe('error')
    expect(describePanic(null).payload).toBe('null')
    expect(describePanic({}).payload).toBe('object')
    expect(describePanic('x').payload).toBe('string')
    expect(describePanic(Symbol('s')).payload).toBe('symbol')
    expect(describePanic(() => {}).payload).toBe('function')
  })

  it('keeps the stack for the log and out of the message', () => {
    const error = new Error('broken')
    const panic = describePanic(error)
    expect(panic.stack).toBe(error.stack)
    expect(panic.message).toBe('broken')
  })

  it('looks at no more than its window of a huge message, and marks the cut', () => {
    const panic = describePanic(new Error(`${'a'.repeat(50)}\u0000${'b'.repeat(5_000_000)}`), 100)
    // 100 characters in all: the control character gone, then 'b's up to the marker for the 5,000,051-character input.
    expect(panic.message).toBe(`${'a'.repeat(50)}${'b'.repeat(18)}… [truncated from 5000051 chars]`)
  })

  it('reads a message made only of control characters as an unknown payload', () => {
    expect(describePanic(new Error('\u0007\u0008')).message).toBe(UNKNOWN_PAYLOAD)
  })
})
