import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Bucket, takeToken } from './index.js'

describe('takeToken', () => {
  it('never admits more than burst + rps × elapsed seconds, whatever the call times', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 0.1, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 10 }),
        (times, rps, burst) => {
          const sorted = [...times].sort((a, b) => a - b)
          let bucket: Bucket | undefined
          let allowed = 0
          for (const now of sorted) {
            const take = takeToken(bucket, now, rps, burst)
            bucket = take.bucket
            if (take.allowed) allowed++
            else expect(take.retryAfterMs).toBeGreaterThan(0)
          }
          const elapsed = (sorted[sorted.length - 1] as number) - (sorted[0] as number)
          expect(allowed).toBeLessThanOrEqual(burst + Math.floor((elapsed * rps) / 1000))
        },
      ),
    )
  })

  it('admits a refused call once retryAfterMs has passed', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.1, max: 50, noNaN: true }), fc.integer({ min: 1, max: 10 }), (rps, burst) => {
        let bucket: Bucket | undefined
        let take = takeToken(bucket, 0, rps, burst)
        while (take.allowed) {
          bucket = take.bucket
          take = takeToken(bucket, 0, rps, burst)
        }
        expect(takeToken(take.bucket, take.retryAfterMs, rps, burst).allowed).toBe(true)
      }),
    )
  })
})
