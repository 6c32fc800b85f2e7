import { OptionsError, ToolError } from '@shallot/core'
import { seededRandom } from '@shallot/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Backoff, constant, decorrelatedJitter, equalJitter, exponential, fullJitter, none } from '../index.js'
import { MAX_DELAY_MS } from './backoff.js'

const error = new ToolError('upstream_error', 'upstream answered 503')

const ms = fc.double({ min: 0, max: MAX_DELAY_MS, noNaN: true })
const baseAndCap = fc.tuple(ms, ms).map(([a, b]) => (a <= b ? { baseMs: a, capMs: b } : { baseMs: b, capMs: a }))
// Small attempts exercise the exponential part, large ones the clamp.
const attempt = fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 1_000_000 }))
const draw = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })
const previous = fc.option(ms, { nil: undefined })

const ceiling = (baseMs: number, capMs: number, n: number) => Math.min(capMs, baseMs * 2 ** Math.min(n - 1, 1000))

function delayOf(backoff: Backoff, n: number, r: number, previousMs?: number): number {
  const delay = backoff.next(n, error, () => r, previousMs)
  if (typeof delay !== 'number') throw new Error(`expected a delay, got ${delay}`)
  expect(Number.isFinite(delay)).toBe(true)
  return delay
}

describe('backoff bounds (property, attempts up to 10^6)', () => {
  it('fullJitter stays within [0, min(cap, base·2^(attempt−1))]', () => {
    fc.assert(
      fc.property(baseAndCap, attempt, draw, ({ baseMs, capMs }, n, r) => {
        const delay = delayOf(fullJitter({ baseMs, capMs }), n, r)
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThanOrEqual(ceiling(baseMs, capMs, n))
        expect(delay).toBeLessThanOrEqual(capMs)
      }),
      { numRuns: 1000 },
    )
  })

  it('equalJitter stays within [c/2, c] where c = min(cap, base·2^(attempt−1))', () => {
    fc.assert(
      fc.property(baseAndCap, attempt, draw, ({ baseMs, capMs }, n, r) => {
        const c = ceiling(baseMs, capMs, n)
        const delay = delayOf(equalJitter({ baseMs, capMs }), n, r)
        expect(delay).toBeGreaterThanOrEqual(c / 2)
        expect(delay).toBeLessThanOrEqual(c)
      }),
      { numRuns: 1000 },
    )
  })

  it('decorrelatedJitter stays within [base, cap] whatever the previous delay', () => {
    fc.assert(
      fc.property(baseAndCap, attempt, draw, previous, ({ baseMs, capMs }, n, r, previousMs) => {
        const delay = delayOf(decorrelatedJitter({ baseMs, capMs }), n, r, previousMs)
        expect(delay).toBeGreaterThanOrEqual(baseMs)
        expect(delay).toBeLessThanOrEqual(capMs)
      }),
      { numRuns: 1000 },
    )
  })

  it('exponential is exactly min(cap, base·2^(attempt−1))', () => {
    fc.assert(
      fc.property(baseAndCap, attempt, ({ baseMs, capMs }, n) => {
        expect(delayOf(exponential({ baseMs, capMs }), n, 0.5)).toBe(ceiling(baseMs, capMs, n))
      }),
      { numRuns: 1000 },
    )
  })

  it('constant always answers its delay, and none always stops', () => {
    fc.assert(
      fc.property(ms, attempt, draw, (delayMs, n, r) => {
        expect(delayOf(constant(delayMs), n, r)).toBe(delayMs)
        expect(none().next(n, error, () => r)).toBe('stop')
      }),
      { numRuns: 1000 },
    )
  })

  it('keeps every delay in bounds even when the random source misbehaves', () => {
    for (const r of [1, 1.5, -0.25, Number.NaN, Number.POSITIVE_INFINITY]) {
      for (const backoff of [fullJitter(), equalJitter(), decorrelatedJitter()]) {
        const delay = delayOf(backoff, 3, r)
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThanOrEqual(8000)
      }
    }
  })

  it('starts at baseMs and doubles: the first retry waits at most baseMs', () => {
    const backoff = exponential({ baseMs: 500, capMs: 8000 })
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoff.next(n, error, Math.random))).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000])
  })
})

describe('backoff options are validated at construction', () => {
  const factories = { fullJitter, equalJitter, decorrelatedJitter, exponential }
  const bad: Array<[string, object, string]> = [
    ['NaN baseMs', { baseMs: Number.NaN }, 'option baseMs'],
    ['negative baseMs', { baseMs: -1 }, 'option baseMs'],
    ['NaN capMs', { capMs: Number.NaN }, 'option capMs'],
    ['negative capMs', { capMs: -5 }, 'option capMs'],
    ['infinite capMs', { capMs: Number.POSITIVE_INFINITY }, 'option capMs'],
    ['capMs past the longest timer', { capMs: MAX_DELAY_MS + 1 }, 'option capMs'],
    ['baseMs above capMs', { baseMs: 9000, capMs: 1000 }, 'option baseMs: must not exceed capMs (1000)'],
    ['capMs below the default baseMs', { capMs: 100 }, 'option baseMs: must not exceed capMs (100) (baseMs is 500 by default)'],
    ['an unknown option', { maxMs: 10 }, 'maxMs'],
  ]
  for (const [name, factory] of Object.entries(factories)) {
    it.each(bad)(`${name}() rejects %s, naming the option`, (_label, options, message) => {
      expect(() => factory(options)).toThrow(OptionsError)
      expect(() => factory(options)).toThrow(`${name}(): `)
      expect(() => factory(options)).toThrow(message)
    })
  }

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY])('constant() rejects %s, naming the option', (value) => {
    expect(() => constant(value)).toThrow(OptionsError)
    expect(() => constant(value)).toThrow('constant(): option ms')
  })

  it('fast-check: any NaN or negative option is refused with its name', () => {
    const invalid = fc.oneof(fc.constant(Number.NaN), fc.double({ max: -Number.MIN_VALUE, noNaN: true }))
    fc.assert(
      fc.property(fc.constantFrom('baseMs', 'capMs'), invalid, (option, value) => {
        expect(() => fullJitter({ [option]: value })).toThrow(`option ${option}`)
      }),
    )
  })
})

/** The Kolmogorov–Smirnov statistic of `samples` against the uniform distribution on [0, max]. */
function ksUniform(samples: number[], max: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  const n = sorted.length
  let d = 0
  sorted.forEach((x, i) => {
    const f = Math.min(1, Math.max(0, x / max))
    d = Math.max(d, (i + 1) / n - f, f - i / n)
  })
  return d
}

describe('full jitter is uniform', () => {
  const n = 10_000
  const critical = 1.36 / Math.sqrt(n)
  const draws = (backoff: Backoff, seed: number) => {
    const random = seededRandom(seed)
    return Array.from({ length: n }, () => delayOf(backoff, 20, random()))
  }

  it('10,000 seeded full-jitter delays pass a Kolmogorov–Smirnov test for uniformity on [0, cap]', () => {
    const samples = draws(fullJitter({ baseMs: 500, capMs: 8000 }), 2026)
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0)
    expect(Math.max(...samples)).toBeLessThanOrEqual(8000)
    expect(ksUniform(samples, 8000)).toBeLessThan(critical)
  })

  it('the same KS test rejects equal jitter on [0, cap], so it can fail', () => {
    expect(ksUniform(draws(equalJitter({ baseMs: 500, capMs: 8000 }), 2026), 8000)).toBeGreaterThan(critical)
  })
})
