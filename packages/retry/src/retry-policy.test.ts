import { ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { backoffFromPolicy } from './backoff-from-policy.js'
import { retry } from './index.js'
import { retryPolicySchema } from './retry-policy.js'

describe('retryPolicySchema', () => {
  it('fills the defaults: full jitter, 3 attempts, AWS standard-mode budget costs', () => {
    expect(retryPolicySchema.parse({})).toEqual({
      backoff: 'full-jitter',
      maxAttempts: 3,
      perCode: {},
      retryBudgetCosts: { retry: 5, timeout: 10, success: 1 },
    })
  })

  it('reads a policy from JSON and builds the backoff it names', () => {
    const policy = retryPolicySchema.parse(
      JSON.parse(
        '{ "backoff": "exponential", "baseMs": 100, "capMs": 400, "maxAttempts": 5, "perCode": { "rate_limited": { "maxAttempts": 4 } } }',
      ),
    )
    const backoff = backoffFromPolicy(policy)
    const error = new ToolError('upstream_error', '503')
    expect([1, 2, 3, 4].map((n) => backoff.next(n, error, Math.random))).toEqual([100, 200, 400, 400])
    expect(() => retry(policy)).not.toThrow()
  })

  it('makes constant wait baseMs and none never repeat', () => {
    const error = new ToolError('upstream_error', '503')
    expect(backoffFromPolicy({ backoff: 'constant', baseMs: 250 }).next(4, error, Math.random)).toBe(250)
    expect(backoffFromPolicy({ backoff: 'none' }).next(1, error, Math.random)).toBe('stop')
  })

  it('refuses unknown keys, bad values and objects where a config needs names', () => {
    expect(retryPolicySchema.safeParse({ maxAttempt: 3 }).success).toBe(false)
    expect(retryPolicySchema.safeParse({ backoff: { next: () => 1 } }).success).toBe(false)
    expect(retryPolicySchema.safeParse({ baseMs: 9000 }).error?.issues[0]).toMatchObject({ path: ['baseMs'] })
    expect(retryPolicySchema.safeParse({ perCode: { timeout: { maxAttempts: 0 } } }).error?.issues[0]?.path).toEqual([
      'perCode',
      'timeout',
      'maxAttempts',
    ])
  })
})
