// Three workers on one Redis, each with its own connection and its own stack: one learns a provider's 30 s
// Retry-After, and the other two send nothing to that model until it passes, then go in over the jitter
// that follows it; a worker of another tenant is not held. See test-support/pushback-fleet.ts.
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStores } from './index.js'
import { OUTAGE_MS, pushbackFleet } from './test-support/pushback-fleet.js'
import { useRedis } from './test-support/redis-fixture.js'

const fixture = useRedis()
const connections: Redis[] = []
afterAll(() => {
  for (const client of connections) client.disconnect()
})

describe('the shared pushback on Redis, across three workers', () => {
  it('one learns a 30 s Retry-After; the other two send nothing to that model until it passes (± jitter)', async () => {
    const report = await pushbackFleet(async (wallNow) => {
      const client = new Redis(fixture.server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
      connections.push(client)
      await client.connect()
      return redisStores({ client, prefix: 'fleet', wallNow, timeoutMs: 10_000 }).pushback
    })
    console.log(`pushback on Redis: arrivals ${JSON.stringify(report.arrivals)}, 429s ${report.pushedBack}`)
    expect(report.outcomes).toEqual({ A1: 'completed', A2: 'completed', A3: 'completed', B1: 'completed' })
    // The learner: its 429 at 0, its retry after the Retry-After.
    expect(report.arrivals.A1).toEqual([0, OUTAGE_MS])
    // The other two: one request each, after the hold and within its jitter (a tenth of it), not at the same instant.
    const held = [report.arrivals.A2, report.arrivals.A3]
    for (const arrivals of held) {
      expect(arrivals).toHaveLength(1)
      expect(arrivals?.[0]).toBeGreaterThanOrEqual(OUTAGE_MS)
      expect(arrivals?.[0]).toBeLessThanOrEqual(OUTAGE_MS * 1.1 + 200)
    }
    expect(held[0]?.[0]).not.toBe(held[1]?.[0])
    // Another tenant's account is not held: it went at once.
    expect(report.arrivals.B1).toEqual([0])
    expect(report.pushedBack).toBe(1)
  }, 60_000)
})
