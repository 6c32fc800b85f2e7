import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type BreakerState, mapTimes, timeMap } from './index.js'

const closed: BreakerState = {
  circuit: 'closed',
  generation: 0,
  counts: null,
  failures: 0,
  openedAt: 0,
  openMs: 0,
  opens: 0,
  probes: [],
  seq: 0,
}

describe('timeMap and mapTimes: a shared store hands the breaker its times in the worker clock', () => {
  it('translates times exactly both ways, never placing a read time after the anchor', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.double({ min: -1e6, max: 1e6, noNaN: true }), (anchor, age) => {
        const storeNow = 1.8e12
        const map = timeMap(anchor, storeNow)
        const local = map.toLocal(storeNow - age)
        expect(local).toBeLessThanOrEqual(anchor)
        if (age >= 0) expect(map.toStore(local)).toBeCloseTo(storeNow - age, 3)
      }),
    )
  })

  it('moves when it opened, each probe and the bucket starts of sampling() counts, and keeps other counts as they are', () => {
    const map = timeMap(100, 1.8e12)
    const sampled = {
      ...closed,
      openedAt: 1.8e12 - 500,
      probes: [[1, 1.8e12 - 20]] as [number, number][],
      counts: { buckets: [[1.8e12 - 50, 2, 1]] },
    }
    expect(mapTimes(sampled, map.toLocal)).toEqual({ ...sampled, openedAt: -400, probes: [[1, 80]], counts: { buckets: [[50, 2, 1]] } })
    const other = { ...closed, counts: { failures: 3, buckets: 'not buckets' } }
    expect(mapTimes(other, map.toLocal).counts).toEqual({ failures: 3, buckets: 'not buckets' })
  })
})
