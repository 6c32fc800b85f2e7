import { describe, expect, it } from 'vitest'
import { UsageError } from '../usage.js'
import { runOutage } from './command.js'
import { outage } from './outage.js'

describe('shallot sim outage: model calls through a provider outage', () => {
  it('rides a 30 s outage out with the two-minute budget, where 3 attempts lose almost every call', async () => {
    const attempts = await outage({ outageMs: 30_000, runs: 40, retry: 'attempts', seed: 1 })
    const time = await outage({ outageMs: 30_000, runs: 40, retry: 'time', seed: 1 })
    expect(time.successRate).toBe(1)
    expect(attempts.successRate).toBeLessThan(0.2)
    expect(attempts.requestsPerCall).toBeLessThanOrEqual(3)
    expect(time.requestsPerCall).toBeLessThanOrEqual(21)
  })

  it('gives a call up within the budget when the outage outlasts it, at no more than 21 requests', async () => {
    const result = await outage({ outageMs: 600_000, runs: 20, retry: 'time', seed: 2 })
    expect(result.successRate).toBeLessThan(1)
    expect(result.requestsPerCall).toBeLessThanOrEqual(21)
    expect(result.p95Ms).toBeLessThanOrEqual(120_000)
  })

  it('prints one row per outage length, both retries side by side, and refuses a bad --runs', async () => {
    const lines: string[] = []
    const results = await runOutage({ runs: '3', seed: '1' }, (line) => lines.push(line))
    expect(results).toHaveLength(14)
    expect(lines[0]).toMatch(/^shallot sim outage: 3 model calls per cell/)
    expect(lines.filter((line) => /^\s+\d+ s\s/.test(line))).toHaveLength(7)
    await expect(runOutage({ runs: '0' }, () => {})).rejects.toThrow(UsageError)
    await expect(runOutage({ runs: 'NaN' }, () => {})).rejects.toThrow(/--runs must be/)
  })
})
