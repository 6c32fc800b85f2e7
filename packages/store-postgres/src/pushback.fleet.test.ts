// Three workers on one PostgreSQL, each with its own pool and its own stack: one learns a provider's 30 s
// Retry-After, and the other two send nothing to that model until it passes, then go in over the jitter
// that follows it; a worker of another tenant is not held. The scenario is store-redis's
// (test-support/pushback-fleet.ts), run here on postgresStores().pushback.
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { OUTAGE_MS, pushbackFleet } from '../../store-redis/src/test-support/pushback-fleet.js'
import { postgresStores } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const fixture = usePostgres()
const pools: pg.Pool[] = []
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()))
})

describe('the shared pushback on PostgreSQL, across three workers', () => {
  it('one learns a 30 s Retry-After; the other two send nothing to that model until it passes (± jitter)', async () => {
    await fixture.stores({ tablePrefix: 'fleet_' })
    const report = await pushbackFleet((wallNow) => {
      const pool = new pg.Pool({ connectionString: fixture.server.url, max: 2 })
      pool.on('error', () => {})
      pools.push(pool)
      return postgresStores({ pool, tablePrefix: 'fleet_', wallNow, timeoutMs: 10_000 }).pushback
    })
    console.log(`pushback on PostgreSQL: arrivals ${JSON.stringify(report.arrivals)}, 429s ${report.pushedBack}`)
    expect(report.outcomes).toEqual({ A1: 'completed', A2: 'completed', A3: 'completed', B1: 'completed' })
    expect(report.arrivals.A1).toEqual([0, OUTAGE_MS])
    const held = [report.arrivals.A2, report.arrivals.A3]
    for (const arrivals of held) {
      expect(arrivals).toHaveLength(1)
      expect(arrivals?.[0]).toBeGreaterThanOrEqual(OUTAGE_MS)
      expect(arrivals?.[0]).toBeLessThanOrEqual(OUTAGE_MS * 1.1 + 200)
    }
    expect(held[0]?.[0]).not.toBe(held[1]?.[0])
    expect(report.arrivals.B1).toEqual([0])
    expect(report.pushedBack).toBe(1)
  }, 60_000)
})
