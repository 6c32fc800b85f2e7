import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { retryBudgetRefills } from './index.js'

describe('retryBudgetRefills', () => {
  it('holds refills until the oldest is flushMs old, then hands every one over at once', async () => {
    const clock = manualClock()
    const refills = retryBudgetRefills(clock, 1000)
    expect([refills.add(1), refills.add(1)]).toEqual([0, 0])
    await clock.advance(999)
    expect(refills.add(1)).toBe(0)
    await clock.advance(1)
    expect(refills.add(2)).toBe(5)
    expect(refills.held).toBe(0)
    // The next batch counts from its own first refill.
    expect(refills.add(1)).toBe(0)
    expect(refills.held).toBe(1)
  })

  it('lets a take carry every held token', () => {
    const refills = retryBudgetRefills(manualClock(), 1000)
    refills.add(3)
    refills.add(4)
    expect(refills.takeAll()).toBe(7)
    expect(refills.takeAll()).toBe(0)
  })

  it('ignores refills that are no tokens (0, negative, NaN)', () => {
    const refills = retryBudgetRefills(manualClock(), 0)
    for (const tokens of [0, -5, Number.NaN]) expect(refills.add(tokens)).toBe(0)
    expect(refills.held).toBe(0)
    expect(refills.add(1)).toBe(1)
  })

  it('counts from now when the clock stepped back, instead of holding for as long as it stepped', async () => {
    let now = 10_000_000
    const refills = retryBudgetRefills({ now: () => now }, 1000)
    refills.add(1)
    now = 0
    expect(refills.add(1)).toBe(0)
    now = 1000
    expect(refills.add(1)).toBe(3)
  })
})
