import { LoopError, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { settleAction } from './settle-action.js'

describe('settleAction', () => {
  const timeout = new ToolError('timeout', 'timed out')
  const throttled = new ToolError('rate_limited', '429', { safeToRepeat: true })
  const cancelled = new LoopError('cancelled', 'stop')

  it.each([
    ['write', timeout, true, 'unknown'],
    ['write', new Error('socket hang up'), true, 'unknown'],
    ['write', cancelled, true, 'unknown'],
    ['write', throttled, true, 'release'],
    ['write', timeout, false, 'release'],
    ['write', cancelled, false, 'release'],
    ['idempotent', timeout, true, 'release'],
    ['idempotent', cancelled, true, 'release'],
    ['read', timeout, true, 'release'],
  ] as const)('a %s tool failing with %o (reached the tool: %s) is %s', (effect, error, reached, action) => {
    expect(settleAction(effect, error, reached)).toBe(action)
  })
})
