import { describe, expect, it } from 'vitest'
import { describeAge } from './describe-age.js'
import { ResultCache } from './result-cache.js'

describe('ResultCache', () => {
  it('forgets the least recently used entry past maxEntries', () => {
    const cache = new ResultCache(2, 1000)
    cache.store('a', 1, 0)
    cache.store('b', 2, 0)
    expect(cache.lookup('a', 0)?.value).toBe(1)
    cache.store('c', 3, 0)
    expect(cache.size).toBe(2)
    expect(cache.lookup('b', 0)).toBeUndefined()
    expect(cache.lookup('a', 0)?.value).toBe(1)
    expect(cache.lookup('c', 0)?.value).toBe(3)
  })

  it('never serves an entry older than maxAgeMs, and drops it', () => {
    const cache = new ResultCache(10, 1000)
    cache.store('a', 1, 0)
    expect(cache.lookup('a', 1000)?.storedAt).toBe(0)
    expect(cache.lookup('a', 1001)).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('keeps the newest value of a key', () => {
    const cache = new ResultCache(10, 1000)
    cache.store('a', 1, 0)
    cache.store('a', 2, 5)
    expect(cache.lookup('a', 5)).toEqual({ value: 2, storedAt: 5 })
    expect(cache.size).toBe(1)
  })
})

describe('describeAge', () => {
  it.each([
    [0, '0 s'],
    [-5, '0 s'],
    [59_999, '59 s'],
    [60_000, '1 min'],
    [245_000, '4 min'],
    [7_199_999, '119 min'],
    [7_200_000, '2 h'],
    [172_800_000, '2 days'],
  ])('%i ms reads %s', (ms, words) => {
    expect(describeAge(ms)).toBe(words)
  })
})
