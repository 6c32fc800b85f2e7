// The claim on a run across a fleet: store instances on one prefix stand for workers. Lease expiry
// runs on a test clock handed to the server as `wallNow`, never a sleep.

import { createAgent, ResumeError } from '@shallot/agent'
import { defineTool, OptionsError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { postgresStores } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()
let prefixes = 0

/** The run ids with a claim row under `tablePrefix`, sorted. */
async function claimRows(tablePrefix: string): Promise<string[]> {
  const { rows } = await pg.pool.query(`SELECT run_id FROM "${tablePrefix}checkpoint_claims" ORDER BY run_id`)
  return rows.map((r: { run_id: string }) => r.run_id)
}

describe('postgres checkpoints claim', () => {
  it('refuses a run held by another worker until the holder releases it; a second release is harmless', async () => {
    const tablePrefix = `claim${++prefixes}_`
    const a = (await pg.stores({ tablePrefix })).checkpoints
    const b = (await pg.stores({ tablePrefix })).checkpoints
    const release = await a.claim('run-1')
    expect(release).toBeTypeOf('function')
    expect(await b.claim('run-1')).toBeUndefined()
    expect(await a.claim('run-1')).toBeUndefined()
    expect(await b.claim('__proto__')).toBeTypeOf('function')
    await release?.()
    await release?.()
    expect(await b.claim('run-1')).toBeTypeOf('function')
    expect(await a.claim('run-1')).toBeUndefined()
  })

  it('gives one run to exactly one of ten workers claiming it at once', async () => {
    const tablePrefix = `claim${++prefixes}_`
    const fleet = await Promise.all(Array.from({ length: 10 }, () => pg.stores({ tablePrefix })))
    const won = (await Promise.all(fleet.map((s) => s.checkpoints.claim('run-1')))).filter((r) => r !== undefined)
    expect(won).toHaveLength(1)
  })

  it('lets a claim lapse once its lease has passed unrenewed; the stale holder’s release then frees nothing', async () => {
    const tablePrefix = `claim${++prefixes}_`
    let now = 1_000_000
    const options = { tablePrefix, claimLeaseMs: 30_000, wallNow: () => now }
    const a = (await pg.stores(options)).checkpoints
    const b = (await pg.stores(options)).checkpoints
    const stale = await a.claim('run-1')
    now += 29_999
    expect(await b.claim('run-1')).toBeUndefined()
    now += 1
    expect(await b.claim('run-1')).toBeTypeOf('function')
    await stale?.()
    expect(await a.claim('run-1')).toBeUndefined()
  })

  it('makes agent.resume on another worker reject run_in_progress, with nothing run, while a run is held', async () => {
    const tablePrefix = `claim${++prefixes}_`
    const ran: string[] = []
    const note = defineTool({
      name: 'write_note',
      description: 'Write a note',
      effect: 'write',
      input: z.object({}),
      execute: () => void ran.push('note'),
    })
    const script = [{ toolCalls: [{ name: 'write_note', args: {} }] }, { text: 'done' }]
    const first = (await pg.stores({ tablePrefix })).checkpoints
    await createAgent({ model: scriptedModel(script), tools: [note], checkpoints: first, limits: { maxTurns: 1 } }).run({
      runId: 'held',
      input: 'x',
    })
    const release = await first.claim('held')
    const other = (await pg.stores({ tablePrefix })).checkpoints
    const agent = createAgent({ model: scriptedModel(script.slice(1)), tools: [note], checkpoints: other })
    await expect(agent.resume('held')).rejects.toSatisfy((err) => ResumeError.is(err) && err.code === 'run_in_progress')
    await release?.()
    expect(await agent.resume('held')).toMatchObject({ status: 'completed', output: 'done' })
    expect(await first.claim('held')).toBeTypeOf('function')
    expect(ran).toEqual(['note'])
  })

  it('sweep() deletes a claim whose lease ran out unrenewed and keeps a live one, to the millisecond', async () => {
    const tablePrefix = `claim${++prefixes}_`
    let now = 1_000_000
    const options = { tablePrefix, claimLeaseMs: 30_000, wallNow: () => now }
    const dead = await pg.stores(options)
    const alive = await pg.stores(options)
    const stale = await dead.checkpoints.claim('lapsed') // its holder dies: never renewed, never released
    now += 1
    const held = await alive.checkpoints.claim('live')
    now += 29_998
    expect(await alive.sweep()).toMatchObject({ claims: 0 }) // 1 ms of lease left
    now += 1
    expect(await alive.sweep()).toMatchObject({ claims: 1 })
    expect(await claimRows(tablePrefix)).toEqual(['live'])
    expect(await dead.checkpoints.claim('live')).toBeUndefined()
    await stale?.() // the dead holder's late release frees nothing and fails nothing
    expect(await claimRows(tablePrefix)).toEqual(['live'])
    expect(await dead.checkpoints.claim('lapsed')).toBeTypeOf('function')
    await held?.()
  })

  it('sweep() deletes planted claim rows a take would replace (empty holder, lease 0 or negative) and keeps one no take would', async () => {
    const tablePrefix = `claim${++prefixes}_`
    const stores = await pg.stores({ tablePrefix, wallNow: () => 1_000_000 })
    await pg.pool.query(
      `INSERT INTO "${tablePrefix}checkpoint_claims" (run_id, holder, lease_until) VALUES
        ('ghost', '', -1), ('zero', 'not a holder', 0), ('__proto__', '', 999999), ('', 'x', 1000000), ('far', '', 9223372036854775807)`,
    )
    expect(await stores.sweep()).toEqual({ idempotency: 0, breakers: 0, checkpoints: 0, claims: 4 })
    // A lease past anything a worker grants is still a lease: only its lapse or a person frees the run.
    expect(await claimRows(tablePrefix)).toEqual(['far'])
    expect(await stores.checkpoints.claim('far')).toBeUndefined()
    const ghost = await stores.checkpoints.claim('ghost')
    expect(ghost).toBeTypeOf('function')
    expect(await stores.sweep()).toMatchObject({ claims: 0 })
    await ghost?.()
  })

  it('never deletes a live claim while sweeps race the takes of lapsed rows', async () => {
    const tablePrefix = `claim${++prefixes}_`
    let now = 1_000_000
    const fleet = await Promise.all(Array.from({ length: 2 }, () => pg.stores({ tablePrefix, claimLeaseMs: 100, wallNow: () => now })))
    const runs = Array.from({ length: 16 }, (_, i) => `run-${i}`)
    await pg.pool.query(
      `INSERT INTO "${tablePrefix}checkpoint_claims" (run_id, holder, lease_until) SELECT unnest($1::text[]), 'dead', 1000000`,
      [runs],
    )
    now += 1 // every planted claim lapsed a millisecond ago
    const sweeps = fleet.flatMap((s) => [s.sweep(), s.sweep(), s.sweep()])
    const releases = await Promise.all(runs.map((run, i) => (fleet[i % fleet.length] as (typeof fleet)[number]).checkpoints.claim(run)))
    const swept = await Promise.all(sweeps)
    expect(releases.every((r) => typeof r === 'function')).toBe(true)
    expect(await fleet[0]?.sweep()).toMatchObject({ claims: 0 })
    expect(await claimRows(tablePrefix)).toEqual([...runs].sort())
    expect(swept.reduce((n, s) => n + s.claims, 0)).toBeLessThanOrEqual(runs.length)
    await Promise.all(releases.map((r) => r?.()))
    expect(await claimRows(tablePrefix)).toEqual([])
  }, 30_000)

  it('refuses a claim lease that is not a whole number of ms from 100, naming the option', () => {
    for (const claimLeaseMs of [0, 99, Number.NaN, 1.5]) {
      expect(() => postgresStores({ connectionString: 'postgres://x@127.0.0.1/x', claimLeaseMs })).toThrow(OptionsError)
      expect(() => postgresStores({ connectionString: 'postgres://x@127.0.0.1/x', claimLeaseMs })).toThrow(/claimLeaseMs/)
    }
  })
})
