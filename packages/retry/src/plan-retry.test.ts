import { ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { type Backoff, constant, fullJitter } from './index.js'
import { MAX_TOTAL_CALLS, planRetry, type RetryFacts } from './plan-retry.js'

const facts = (overrides: Partial<RetryFacts> = {}): RetryFacts => ({
  error: new ToolError('upstream_error', '503'),
  effect: 'read',
  calls: 1,
  totalCalls: 1,
  maxAttempts: 3,
  elapsedMs: 0,
  maxElapsedMs: Number.POSITIVE_INFINITY,
  previousMs: undefined,
  ...overrides,
})
const half = () => 0.5

describe('planRetry', () => {
  it('repeats a transient failure of a read tool after the backoff delay', () => {
    expect(planRetry(fullJitter(), facts(), half)).toEqual({ retry: true, delayMs: 250 })
  })

  it('names the first reason to stop, cheapest first', () => {
    const write = facts({ effect: 'write' })
    expect(planRetry(constant(1), facts({ error: new ToolError('not_found', 'no such file') }), half)).toMatchObject({
      reason: 'not_retryable',
    })
    expect(planRetry(constant(1), write, half)).toMatchObject({ reason: 'unsafe_write' })
    expect(planRetry(constant(1), facts({ effect: undefined }), half)).toMatchObject({ reason: 'unsafe_write' })
    expect(planRetry(constant(1), facts({ calls: 3 }), half)).toMatchObject({ reason: 'max_attempts' })
    expect(planRetry({ next: () => 'stop' }, facts(), half)).toMatchObject({ reason: 'backoff_stop' })
    expect(planRetry(constant(1000), facts({ elapsedMs: 500, maxElapsedMs: 1400 }), half)).toMatchObject({ reason: 'max_elapsed' })
    expect(planRetry(constant(1), facts({ totalCalls: MAX_TOTAL_CALLS, maxAttempts: 100 }), half)).toMatchObject({
      reason: 'recovery_ceiling',
    })
  })

  it('lets a write tool repeat a safeToRepeat failure', () => {
    const error = new ToolError('rate_limited', '429', { safeToRepeat: true })
    expect(planRetry(constant(5), facts({ effect: 'write', error }), half)).toEqual({ retry: true, delayMs: 5 })
  })

  it('uses retryAfterMs as a floor, and refuses to wait past the cap or the time left', () => {
    const after = (ms: number) => new ToolError('rate_limited', '429', { safeToRepeat: true, retryAfterMs: ms })
    expect(planRetry(fullJitter(), facts({ error: after(3000) }), half)).toEqual({ retry: true, delayMs: 3000 })
    expect(planRetry(fullJitter(), facts({ error: after(9000) }), half)).toMatchObject({ reason: 'retry_after_too_long' })
    expect(planRetry(fullJitter(), facts({ error: after(3000), maxElapsedMs: 2000 }), half)).toMatchObject({
      reason: 'retry_after_too_long',
    })
    expect(planRetry(fullJitter(), facts({ error: after(Number.NaN) }), half)).toEqual({ retry: true, delayMs: 250 })
  })

  it('reads a custom backoff answering garbage as stop, and clamps negative or huge delays', () => {
    const answering = (value: unknown): Backoff => ({ next: () => value as number })
    expect(planRetry(answering(undefined), facts(), half)).toMatchObject({ reason: 'backoff_stop' })
    expect(planRetry(answering(Number.NaN), facts(), half)).toMatchObject({ reason: 'backoff_stop' })
    expect(planRetry(answering('soon'), facts(), half)).toMatchObject({ reason: 'backoff_stop' })
    expect(planRetry(answering(-20), facts(), half)).toEqual({ retry: true, delayMs: 0 })
    expect(planRetry(answering(Number.POSITIVE_INFINITY), facts(), half)).toEqual({ retry: true, delayMs: 2_147_483_647 })
  })

  it('asks the backoff with the retry number and the previous delay', () => {
    const asked: unknown[] = []
    const spy: Backoff = {
      next: (attempt, _e, _r, previousMs) => {
        asked.push([attempt, previousMs])
        return 1
      },
    }
    planRetry(spy, facts({ calls: 2, previousMs: 400 }), half)
    expect(asked).toEqual([[2, 400]])
  })
})
