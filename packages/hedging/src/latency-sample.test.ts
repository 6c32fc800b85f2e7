import { describe, expect, it } from 'vitest'
import { LatencySample } from './latency-sample.js'

describe('LatencySample', () => {
  it('answers the nearest-rank percentile of what it holds', () => {
    const sample = new LatencySample(100)
    expect(sample.percentile(0.95)).toBeUndefined()
    for (let ms = 1; ms <= 100; ms++) sample.add(ms)
    expect(sample.percentile(0.95)).toBe(95)
    expect(sample.percentile(0.5)).toBe(50)
  })

  it('keeps only the latest `size` latencies', () => {
    const sample = new LatencySample(10)
    for (let i = 0; i < 10; i++) sample.add(1000)
    for (let i = 0; i < 10; i++) sample.add(5)
    expect(sample.count).toBe(10)
    expect(sample.percentile(0.95)).toBe(5)
  })

  it('follows a shift in latency within a tenth of its size', () => {
    const sample = new LatencySample(20)
    for (let i = 0; i < 20; i++) sample.add(10)
    expect(sample.percentile(0.9)).toBe(10)
    for (let i = 0; i < 20; i++) sample.add(400)
    expect(sample.percentile(0.9)).toBe(400)
  })
})
