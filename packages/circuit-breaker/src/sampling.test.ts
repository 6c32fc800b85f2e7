import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { sampling } from './index.js'
import type { SamplingCounts } from './sampling.js'

const record = (policy: ReturnType<typeof sampling>, outcomes: Array<[number, boolean]>, from = policy.initial()) =>
  outcomes.reduce<SamplingCounts>((counts, [at, failed]) => policy.record(counts, failed, at), from)

describe('sampling', () => {
  it('opens once the window holds minimumThroughput calls and the failure ratio is reached', () => {
    const policy = sampling({ failureRatio: 0.5, minimumThroughput: 4, windowMs: 1000 })
    const three = record(policy, [
      [0, true],
      [10, true],
      [20, true],
    ])
    expect(policy.shouldOpen(three, 20)).toBeUndefined()
    const four = policy.record(three, false, 30)
    expect(policy.shouldOpen(four, 30)).toBe('3 of 4 calls failed in the last 1000 ms (failure ratio 0.75 >= 0.5)')
    expect(policy.failures(four, 30)).toBe(3)
  })

  it('stays closed below the ratio however many calls there are', () => {
    const policy = sampling({ failureRatio: 0.5, minimumThroughput: 2, windowMs: 1000 })
    const outcomes = Array.from({ length: 300 }, (_, i): [number, boolean] => [i, i % 3 === 0])
    expect(policy.shouldOpen(record(policy, outcomes), 299)).toBeUndefined()
  })

  it('forgets calls at most windowMs after they happened, a whole bucket at a time', () => {
    const policy = sampling({ failureRatio: 1, minimumThroughput: 2, windowMs: 1000, buckets: 10 })
    const counts = record(policy, [
      [0, true],
      [50, true],
    ])
    expect(policy.failures(counts, 999)).toBe(2)
    expect(policy.failures(counts, 1000)).toBe(0)
    expect(policy.shouldOpen(counts, 1000)).toBeUndefined()
  })

  it('keeps at most one bucket per bucket length, whatever the call pattern', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.boolean()), { maxLength: 200 }), (steps) => {
        const policy = sampling({ windowMs: 1000, buckets: 10 })
        let now = 0
        let counts = policy.initial()
        for (const [dt, failed] of steps) {
          now += dt
          counts = policy.record(counts, failed, now)
          expect(counts.buckets.length).toBeLessThanOrEqual(10)
        }
      }),
    )
  })

  it('never changes the counts it was given', () => {
    const policy = sampling({ windowMs: 1000 })
    const counts = record(policy, [[0, true]])
    const copy = JSON.parse(JSON.stringify(counts))
    policy.record(counts, false, 10)
    policy.record(counts, true, 5000)
    expect(counts).toEqual(copy)
  })

  it('moves buckets stamped by another clock back to now, keeping their ages', () => {
    const policy = sampling({ windowMs: 1000 })
    const counts = record(policy, [
      [9_000_000, true],
      [9_000_500, true],
    ])
    const rebased = policy.rebase(counts, 100)
    expect(rebased.buckets.map(([at]) => at)).toEqual([-400, 100])
    expect(policy.rebase(rebased, 100)).toBe(rebased)
  })

  it('recognises only its own counts', () => {
    const policy = sampling()
    expect(policy.isCounts({ buckets: [[0, 1, 2]] })).toBe(true)
    expect(policy.isCounts({ failures: 2 })).toBe(false)
    expect(policy.isCounts({ buckets: [[0, 1]] })).toBe(false)
  })
})
