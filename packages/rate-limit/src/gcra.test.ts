import { describe, expect, it } from 'vitest'
import { gcra, memoryRateLimitStore } from './index.js'

const rule = { intervalMs: 100, burst: 3, maxWaitMs: 250 }

describe('gcra', () => {
  it('admits a burst at once from rest, then one call per interval, reserving places up to maxWaitMs ahead', () => {
    let tat: number | undefined
    const waits: Array<number | 'refused'> = []
    for (let i = 0; i < 7; i++) {
      const step = gcra(tat, 0, rule)
      waits.push(step.admitted ? step.waitMs : 'refused')
      if (step.admitted) tat = step.tat
    }
    expect(waits).toEqual([0, 0, 0, 100, 200, 'refused', 'refused'])
    expect(tat).toBe(500)
  })

  it('answers a refused call with the wait after which a call would go at once, and changes nothing', () => {
    const step = gcra(600, 0, rule)
    expect(step).toEqual({ admitted: false, waitMs: 400, tat: 600 })
  })

  it('reads a TAT that is not finite, or in the past, as a key at rest', () => {
    for (const tat of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -5, undefined]) {
      expect(gcra(tat, 1000, rule)).toEqual({ admitted: true, waitMs: 0, tat: 1100 })
    }
  })

  it('holds the long-run rate: over 10 s at one call per 100 ms, burst 3, at most 3 + 100 calls go', () => {
    const store = memoryRateLimitStore()
    let admitted = 0
    for (let now = 0; now <= 10_000; now += 7) {
      const d = store.acquire('k', { ...rule, maxWaitMs: 0 }, now) as { admitted: boolean }
      if (d.admitted) admitted++
    }
    expect(admitted).toBeGreaterThanOrEqual(100)
    expect(admitted).toBeLessThanOrEqual(103)
  })
})

describe('memoryRateLimitStore', () => {
  it('keeps __proto__, constructor and toString as keys like any other', () => {
    const store = memoryRateLimitStore()
    const one = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(store.acquire(key, one, 0)).toEqual({ admitted: true, waitMs: 0 })
      expect(store.acquire(key, one, 0)).toEqual({ admitted: false, waitMs: 1000 })
    }
    expect(store.size).toBe(4)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('stays within maxKeys: keys at rest go first, then the oldest', () => {
    const store = memoryRateLimitStore({ maxKeys: 3 })
    const one = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }
    for (let i = 0; i < 100; i++) store.acquire(`tenant-${i}`, one, i)
    expect(store.size).toBeLessThanOrEqual(3)
  })

  it('refuses a maxKeys that is not a positive integer', () => {
    for (const maxKeys of [0, -1, 1.5, Number.NaN])
      expect(() => memoryRateLimitStore({ maxKeys })).toThrow(/maxKeys must be a positive integer/)
  })
})
