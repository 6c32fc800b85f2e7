// The must-shows of a fleet on PostgreSQL: real worker processes (test/worker.mjs) sharing one real
// server, the world being an `effects` table in it. The workers import the BUILT packages (dist),
// which vitest's global setup builds before any test file starts (.ci/vitest-build.ts). Real time is
// unavoidable here, and only here: separate processes and a real
// server cannot share a fake clock. Leases and holds are a few hundred milliseconds; the tests wait
// by awaiting the workers' answers and by polling the effects table, never by a fixed sleep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Result, startFleet, stopFleet, until, type Worker, type WorkerConfig } from './test-support/fleet-workers.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()
const started: Worker[] = []
let base: Omit<WorkerConfig, 'tablePrefix'>

async function fleet(count: number, config: Partial<WorkerConfig> & { tablePrefix: string }): Promise<Worker[]> {
  const workers = await startFleet(count, { ...base, ...config })
  started.push(...workers)
  return workers
}

/** How many times `what` happened in the world. */
async function effects(what: string): Promise<number> {
  const { rows } = await pg.pool.query('SELECT count(*) AS n FROM effects WHERE what = $1', [what])
  return Number(rows[0].n)
}

beforeAll(async () => {
  await pg.pool.query('CREATE TABLE effects (id serial PRIMARY KEY, what text NOT NULL, pid int NOT NULL)')
  base = { url: pg.server.url, leaseMs: 5000, holdMs: 200 }
}, 120_000)

afterAll(async () => {
  await stopFleet(started)
})

describe('a fleet of worker processes on one PostgreSQL', () => {
  it('runs the side effect once fleet-wide for 8 processes × 50 concurrent identical write calls', async () => {
    const workers = await fleet(8, { tablePrefix: 'burst_' })
    const replies = await Promise.all(workers.map((w) => w.send({ args: { order: 'o-burst', amount: 5 }, calls: 50, runId: 'run-burst' })))
    const results = replies.flat()
    expect(results).toHaveLength(400)
    expect(results.filter((r) => !r.ok)).toEqual([])
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    expect(new Set(results.map((r) => r.value?.chargeId)).size).toBe(1)
    expect(await effects('charge o-burst')).toBe(1)
  }, 60_000)

  it('answers outcome_unknown, not a second charge, after a worker is SIGKILLed between the side effect and complete', async () => {
    const [victim] = await fleet(1, { tablePrefix: 'kill_', leaseMs: 400, mode: 'crash-after-effect' })
    const [survivor] = await fleet(1, { tablePrefix: 'kill_', leaseMs: 400 })
    const call = { args: { order: 'o-kill', amount: 5 }, runId: 'run-kill' }
    await expect(victim?.one(call)).rejects.toThrow(/SIGKILL/)
    expect(await victim?.exited).toMatchObject({ signal: 'SIGKILL' })
    expect(await effects('charge o-kill')).toBe(1)

    // The survivor waits out the victim's lease, then is told the outcome is unknown, as is every later caller.
    expect(await survivor?.one(call)).toMatchObject({ ok: false, code: 'outcome_unknown', replayed: false })
    expect(await survivor?.one(call)).toMatchObject({ ok: false, code: 'outcome_unknown' })
    expect(await effects('charge o-kill')).toBe(1)
  }, 60_000)
})

describe('a fleet while PostgreSQL stops and starts again mid-run', () => {
  it('answers softly while the server is down, crashes no worker, and afterwards loses no record and charges nothing twice', async () => {
    const workers = await fleet(4, { tablePrefix: 'outage_', leaseMs: 600, holdMs: 30, timeoutMs: 1000 })
    const orders = (w: number) => Array.from({ length: 60 }, (_, i) => `w${w}-${i}`)
    const running = Promise.all(workers.map((w, i) => w.send({ orders: orders(i), runId: 'run-outage' })))

    await until(async () => Number((await pg.pool.query('SELECT count(*) AS n FROM effects')).rows[0].n) >= 20, 'the first charges')
    await pg.server.stop('fast')
    await pg.server.start()
    const first = (await running).map((results, w) => results.map((result, i) => ({ order: orders(w)[i] as string, result })))
    expect(workers.every((w) => w.alive)).toBe(true)

    const all = first.flat()
    const refused = all.filter(({ result }) => result.code === 'store_unavailable')
    const stored = all.filter(({ result }) => result.ok && !result.events.includes('idempotency.store_error'))
    expect(refused.length).toBeGreaterThan(0)
    expect(stored.length).toBeGreaterThan(0)
    for (const { order } of refused) expect(await effects(`charge ${order}`)).toBe(0)
    // Nothing but these answers: stored, refused before running, or a call the outage caught in flight.
    console.info(
      `outage: ${all.length} calls, ${stored.length} stored, ${refused.length} refused store_unavailable, ${all.length - stored.length - refused.length} caught in flight`,
    )
    const caught = all.filter(({ result }) => !stored.some((s) => s.result === result) && !refused.some((r) => r.result === result))
    for (const { result } of caught) expect(result.ok || result.code === 'upstream_error', JSON.stringify(result)).toBe(true)

    // Every order again, each on another worker, after the restart.
    const again = await Promise.all(workers.map((w, i) => w.send({ orders: orders((i + 1) % workers.length), runId: 'run-outage' })))
    const second = new Map<string, Result>()
    for (const [i, results] of again.entries()) {
      for (const [j, result] of results.entries()) second.set(orders((i + 1) % workers.length)[j] as string, result)
    }
    for (const { order, result } of stored) {
      expect(second.get(order)).toMatchObject({ ok: true, replayed: true, value: result.value })
    }
    // A refused call ran nothing; now it runs. (Should the outage have swallowed the answer to a begin that
    // committed, that record reads outcome_unknown instead: failing closed, never a second run.)
    for (const { order } of refused) {
      const after = second.get(order)
      expect(after?.ok ? after : after?.code, order).toEqual(after?.ok ? expect.objectContaining({ replayed: false }) : 'outcome_unknown')
    }
    expect(refused.filter(({ order }) => second.get(order)?.ok).length).toBeGreaterThan(0)
    for (const { order } of caught) expect(second.get(order)).toMatchObject({ ok: false, code: 'outcome_unknown' })
    const { rows } = await pg.pool.query(
      "SELECT what, count(*) AS n FROM effects WHERE what LIKE 'charge w%' GROUP BY what HAVING count(*) > 1",
    )
    expect(rows).toEqual([])
    expect(await effects('charge w0-0')).toBe(1)
  }, 120_000)
})
