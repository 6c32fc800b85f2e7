// The must-shows of a fleet: real worker processes (test/worker.mjs) sharing one real Redis.
// The workers import the BUILT packages (dist), which vitest's global setup builds before any test
// file starts (.ci/vitest-build.ts).
// Real time is unavoidable here, and only here: separate processes and a real server cannot share a
// fake clock. Leases, holds and cooldowns are a few hundred milliseconds to keep each test short;
// the tests wait by awaiting the workers' answers and by polling the effects file; the one timed wait
// is the breaker's cooldown, for as long as Redis said was left.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { effects, type Result, spread, startFleet, stopFleet, until, type Worker, type WorkerConfig } from './test-support/fleet-workers.js'
import { type RedisServer, startRedisServer } from './test-support/redis-server.js'

let dir: string
let redis: RedisServer
let fleet: Worker[]
let config: WorkerConfig

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shallot-fleet-'))
  redis = await startRedisServer()
  config = {
    port: redis.port,
    prefix: 'fleet',
    effects: join(dir, 'effects.log'),
    leaseMs: 1500,
    holdMs: 200,
    cooldownMs: 500,
    timeoutMs: 1000,
  }
  fleet = await startFleet(8, config)
}, 120_000)

afterAll(async () => {
  await stopFleet(fleet ?? [])
  await redis?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('a fleet of 8 worker processes on one Redis', () => {
  it('runs the side effect once fleet-wide for 50 concurrent identical write calls', async () => {
    const replies = await Promise.all(
      spread(50, 8).map((calls, i) =>
        fleet[i]?.send({ tool: 'charge_card', args: { order: 'o-burst', amount: 5 }, calls, runId: 'run-burst' }),
      ),
    )
    const results = replies.flat() as Result[]
    expect(results).toHaveLength(50)
    expect(results.filter((r) => !r.ok)).toEqual([])
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    expect(new Set(results.map((r) => r.value?.chargeId)).size).toBe(1)
    expect(effects(config.effects, 'charge o-burst')).toBe(1)
  }, 30_000)

  it('opens the breaker on failures in worker A; worker B refuses without calling; after the cooldown 100 concurrent calls run one probe', async () => {
    const [a, b] = fleet as [Worker, Worker]
    expect(await a.one({ tool: 'lookup', args: { q: 'a1' }, lookupFails: true })).toMatchObject({ ok: false, code: 'upstream_error' })
    const opened = await a.one({ tool: 'lookup', args: { q: 'a2' }, lookupFails: true })
    expect(opened).toMatchObject({ ok: false, code: 'upstream_error' })
    expect(opened.events).toContain('circuit-breaker.state')

    const refused = await b.one({ tool: 'lookup', args: { q: 'b1' } })
    expect(refused).toMatchObject({ ok: false, code: 'circuit_open' })
    expect(effects(config.effects, 'lookup b1')).toBe(0)

    // The cooldown is real time in Redis; B was told how long is left. The probe waits in the tool until every
    // call of every worker was refused or let in, however slow the machine: none can come after the probe settled.
    await new Promise((resolve) => setTimeout(resolve, (refused.retryAfterMs ?? 0) + 20))
    const held = spread(100, 8).map((calls, i) =>
      (fleet[i] as Worker).hold({ tool: 'lookup', args: { q: 'probe' }, calls, lookupFails: false }),
    )
    await Promise.all(held.map((h) => h.decided))
    for (const worker of fleet) worker.release()
    const results = (await Promise.all(held.map((h) => h.results))).flat()
    // The store answered every call: a worker that decides on its local state (store_error) is another test.
    expect(results.filter((r) => r.events.includes('circuit-breaker.store_error'))).toEqual([])
    expect(results).toHaveLength(100)
    expect(results.filter((r) => r.events.includes('circuit-breaker.probe'))).toHaveLength(1)
    expect(effects(config.effects, 'lookup probe')).toBe(1)
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(results.filter((r) => r.code === 'circuit_open')).toHaveLength(99)
    expect(await b.one({ tool: 'lookup', args: { q: 'b2' } })).toMatchObject({ ok: true })
  }, 30_000)

  it('leaves outcome_unknown, not a duplicate, when a worker is SIGKILLed mid-call', async () => {
    const [victim] = await startFleet(1, { ...config, leaseMs: 400, holdMs: 10_000 })
    const call = { tool: 'charge_card', args: { order: 'o-kill', amount: 5 }, runId: 'run-kill' } as const
    void victim?.send(call)
    await until(() => effects(config.effects, 'charge o-kill') === 1, 'the victim to charge the card')
    victim?.child.kill('SIGKILL')
    expect(await victim?.exited).toMatchObject({ signal: 'SIGKILL' })

    const after = await fleet[1]?.one(call)
    expect(after).toMatchObject({ ok: false, code: 'outcome_unknown' })
    expect(effects(config.effects, 'charge o-kill')).toBe(1)
  }, 30_000)

  it('does not let a worker SIGSTOPped past its lease complete when it is continued', async () => {
    const [victim] = (await startFleet(1, { ...config, leaseMs: 700, holdMs: 600 })) as [Worker]
    const call = { tool: 'charge_card', args: { order: 'o-stop', amount: 5 }, runId: 'run-stop' } as const
    const stopped = victim.one(call)
    await until(() => effects(config.effects, 'charge o-stop') === 1, 'the victim to charge the card')
    victim.child.kill('SIGSTOP')

    // Another worker waits out the lease and is told the outcome is unknown: that fences the victim out.
    expect(await fleet[2]?.one(call)).toMatchObject({ ok: false, code: 'outcome_unknown' })
    victim.child.kill('SIGCONT')
    const late = await stopped
    expect(late.events).toContain('idempotency.token_lost')
    expect(late.events).not.toContain('idempotency.stored')

    expect(await fleet[3]?.one(call)).toMatchObject({ ok: false, code: 'outcome_unknown', replayed: false })
    expect(effects(config.effects, 'charge o-stop')).toBe(1)
    await stopFleet([victim])
  }, 30_000)
})

describe('a fleet when Redis stops and comes back', () => {
  it('answers softly while Redis is down, crashes nothing, loses no record, and is back to normal after the restart', async () => {
    const persistent = await startRedisServer({ persist: true })
    const own = { ...config, port: persistent.port, prefix: 'outage', effects: join(dir, 'outage.log'), leaseMs: 1000, holdMs: 400 }
    const workers = (await startFleet(3, own)) as [Worker, Worker, Worker]
    try {
      const [w0, w1, w2] = workers
      const kept = await w0.one({ tool: 'charge_card', args: { order: 'o-kept', amount: 5 }, runId: 'run-outage' })
      expect(kept).toMatchObject({ ok: true, replayed: false })

      // One write is mid-call when Redis goes away: it finishes, but its record cannot be completed.
      const inFlight = w1.one({ tool: 'charge_card', args: { order: 'o-flight', amount: 5 }, runId: 'run-outage' })
      await until(() => effects(own.effects, 'charge o-flight') === 1, 'the in-flight charge')
      await persistent.stop()
      expect(await inFlight).toMatchObject({ ok: true, replayed: false })
      expect((await inFlight).events).toContain('idempotency.store_error')

      const refused = await w2.one({ tool: 'charge_card', args: { order: 'o-new', amount: 5 }, runId: 'run-outage' })
      expect(refused).toMatchObject({ ok: false, code: 'store_unavailable' })
      const read = await w0.one({ tool: 'lookup', args: { q: 'down' } })
      expect(read).toMatchObject({ ok: true })
      expect(read.events).toContain('circuit-breaker.store_error')
      expect(await w1.one({ tool: 'charge_card', args: { order: 'o-kept', amount: 5 }, runId: 'run-outage' })).toMatchObject({
        ok: false,
        code: 'store_unavailable',
      })
      expect(workers.every((w) => w.alive)).toBe(true)
      expect(effects(own.effects, 'charge o-new')).toBe(0)

      await persistent.restart()
      let back: Result | undefined
      await until(async () => {
        back = await w2.one({ tool: 'charge_card', args: { order: 'o-new', amount: 5 }, runId: 'run-outage' })
        return back.ok
      }, 'the fleet to use Redis again')
      expect(back).toMatchObject({ ok: true, replayed: false })
      // Each worker's client reconnects on its own schedule: wait until the other two reach Redis again
      // (a read that no longer falls back to local breaker state) before asking them about records.
      for (const worker of [w0, w1]) {
        await until(async () => {
          const ping = await worker.one({ tool: 'lookup', args: { q: 'ping' } })
          return ping.ok && !ping.events.includes('circuit-breaker.store_error')
        }, 'every worker to reach Redis again')
      }
      expect(await w1.one({ tool: 'charge_card', args: { order: 'o-kept', amount: 5 }, runId: 'run-outage' })).toMatchObject({
        ok: true,
        replayed: true,
        value: kept.value,
      })
      expect(await w0.one({ tool: 'charge_card', args: { order: 'o-flight', amount: 5 }, runId: 'run-outage' })).toMatchObject({
        ok: false,
        code: 'outcome_unknown',
      })
      expect(await w0.one({ tool: 'lookup', args: { q: 'up' } })).not.toHaveProperty(
        'events',
        expect.arrayContaining(['circuit-breaker.store_error']),
      )
      expect([
        effects(own.effects, 'charge o-kept'),
        effects(own.effects, 'charge o-new'),
        effects(own.effects, 'charge o-flight'),
      ]).toEqual([1, 1, 1])
      expect(workers.every((w) => w.alive)).toBe(true)
    } finally {
      await stopFleet(workers)
      await persistent.close()
    }
  }, 60_000)
})
