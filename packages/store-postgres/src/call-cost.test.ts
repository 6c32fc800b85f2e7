// What one successful call costs the shared PostgreSQL through the default stack, counted by the
// server itself (pg_stat_statements, BEGIN and COMMIT included): the statements it ran, and the WAL
// records they wrote.
import { createStack, defineTool, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { defaultMiddleware } from 'shallot'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { usePostgres } from './test-support/postgres-fixture.js'

const db = usePostgres({ settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } })
beforeAll(async () => {
  await db.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
})

interface Cost {
  readonly statements: number
  readonly walRecords: number
  readonly byQuery: Array<{ query: string; calls: number; wal: number }>
}

/** What `work` cost the server: every statement it ran (the counting's own left out) and the WAL records they wrote. */
async function cost(work: () => Promise<void>): Promise<Cost> {
  await db.pool.query('SELECT pg_stat_statements_reset()')
  await work()
  const { rows } = await db.pool.query<{ query: string; calls: string; wal: string }>(
    `SELECT query, calls::text AS calls, wal_records::text AS wal FROM pg_stat_statements
      WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC`,
  )
  const byQuery = rows.map((r) => ({ query: r.query.replace(/\s+/g, ' ').slice(0, 90), calls: Number(r.calls), wal: Number(r.wal) }))
  return {
    statements: byQuery.reduce((n, r) => n + r.calls, 0),
    walRecords: byQuery.reduce((n, r) => n + r.wal, 0),
    byQuery,
  }
}

const input = z.object({ id: z.number() })
const lookup = defineTool({ name: 'lookup', description: 'Look up a number', input, effect: 'read', execute: ({ id }) => id + 1 })
const record = defineTool({ name: 'record', description: 'Record a number', input, effect: 'write', execute: ({ id }) => id + 1 })

async function fleetStack(refillFlushMs?: number) {
  const clock = manualClock(1_000)
  const stores = await db.stores({ clock, ...(refillFlushMs === undefined ? {} : { retryBudget: { refillFlushMs } }) })
  const middleware = defaultMiddleware({
    idempotency: { store: stores.idempotency },
    circuitBreaker: { store: stores.breaker },
    retry: { retryBudget: stores.retryBudget },
  })
  const stack = createStack({ clock, middleware, tools: [lookup, record] })
  let serial = 0
  const call = async (name: string): Promise<ToolResult> => stack.dispatch({ id: `c${++serial}`, name, args: { id: serial } })
  return { clock, call }
}

const CALLS = 20

describe('what a successful call costs PostgreSQL through defaultMiddleware() with postgresStores()', () => {
  it('a read runs no statement once warm, and a write at most three', async () => {
    const { call } = await fleetStack()
    expect(await call('lookup')).toMatchObject({ ok: true })
    expect(await call('record')).toMatchObject({ ok: true })

    const reads = await cost(async () => {
      for (let i = 0; i < CALLS; i++) expect(await call('lookup')).toMatchObject({ ok: true })
    })
    const writes = await cost(async () => {
      for (let i = 0; i < CALLS; i++) expect(await call('record')).toMatchObject({ ok: true })
    })
    const perCall = (n: number) => n / CALLS
    console.info(
      `postgres per read: ${perCall(reads.statements)} statements, ${perCall(reads.walRecords)} WAL records ${JSON.stringify(reads.byQuery)}\n` +
        `postgres per write: ${perCall(writes.statements)} statements, ${perCall(writes.walRecords)} WAL records ${JSON.stringify(writes.byQuery)}`,
    )
    expect(perCall(reads.statements)).toBe(0)
    expect(perCall(writes.statements)).toBeLessThanOrEqual(3)
  })

  it('reads a closed breaker again once storeRefreshMs passed with one plain SELECT: no row lock, no WAL', async () => {
    // The budget's refills are held longer than the test runs, so what is counted is the breaker's check alone.
    const { clock, call } = await fleetStack(60_000)
    expect(await call('lookup')).toMatchObject({ ok: true })
    await clock.advance(1000)
    const check = await cost(async () => {
      expect(await call('lookup')).toMatchObject({ ok: true })
    })
    expect(check.statements).toBe(1)
    expect(check.walRecords).toBe(0)
    expect(check.byQuery[0]?.query).toMatch(/^SELECT /)
    expect(check.byQuery[0]?.query).not.toMatch(/FOR UPDATE/)
  })
})
