import { describe, expect, it } from 'vitest'
import { scopeFrom, scopeProblem, scopeSchema } from './scope.js'

describe('scope', () => {
  it('accepts 1 to 128 printable ASCII characters without spaces, in an option and from a function alike', () => {
    for (const good of ['t', 'tenant:42', '~'.repeat(128)]) {
      expect(scopeProblem(good)).toBeUndefined()
      expect(scopeSchema.safeParse(good).success).toBe(true)
    }
    for (const bad of ['', 'has space', 'x'.repeat(129), 'é', 'tab\t']) {
      expect(scopeProblem(bad)).toMatch(/^must be 1-128 printable ASCII characters without spaces, got "/)
      expect(scopeSchema.safeParse(bad).success).toBe(false)
    }
  })

  it('names what it got: a string quoted and cut to 40 characters, anything else by its type', () => {
    expect(scopeProblem('x'.repeat(200))).toBe(`must be 1-128 printable ASCII characters without spaces, got "${'x'.repeat(40)}"`)
    expect(scopeProblem(5)).toBe('must be 1-128 printable ASCII characters without spaces, got number')
    expect(scopeProblem(10n)).toBe('must be 1-128 printable ASCII characters without spaces, got bigint')
    expect(scopeProblem(undefined)).toBe('must be 1-128 printable ASCII characters without spaces, got undefined')
  })

  it('asks a scope function and says why there is no scope when it throws or answers garbage', () => {
    expect(scopeFrom((n: number) => `tenant-${n}`, 7)).toEqual({ scope: 'tenant-7' })
    expect(
      scopeFrom(() => {
        throw new Error('no tenant on this run')
      }, 0),
    ).toEqual({ problem: 'threw: no tenant on this run' })
    expect(
      scopeFrom(() => {
        throw Symbol('odd')
      }, 0),
    ).toEqual({ problem: 'threw: symbol' })
    expect(scopeFrom(() => 'has space', 0)).toEqual({ problem: 'must be 1-128 printable ASCII characters without spaces, got "has space"' })
  })
})
