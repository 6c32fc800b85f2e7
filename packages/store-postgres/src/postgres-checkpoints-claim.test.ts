// The claim on a run across a fleet: store instances on one prefix stand for workers. Lease expiry
// runs on a test clock handed to the server as `wallNow`, never a sleep.
import { createAgent, defineTool, OptionsError, ResumeError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { postgresStores } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()
let prefixes = 0

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

  it('refuses a claim lease that is not a whole number of ms from 100, naming the option', () => {
    for (const claimLeaseMs of [0, 99, Number.NaN, 1.5]) {
      expect(() => postgresStores({ connectionString: 'postgres://x@127.0.0.1/x', claimLeaseMs })).toThrow(OptionsError)
      expect(() => postgresStores({ connectionString: 'postgres://x@127.0.0.1/x', claimLeaseMs })).toThrow(/claimLeaseMs/)
    }
  })
})
