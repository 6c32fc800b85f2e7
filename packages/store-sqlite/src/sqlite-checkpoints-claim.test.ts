// The claim on a run: two connections on one file stand for two processes; a third, real process
// that dies holding a claim shows that a dead holder's claim lapses at once (it loads the BUILT
// package, dist, which vitest's global setup builds first: .ci/vitest-build.ts). Lease expiry runs on
// fake timers (Date and setInterval), never a sleep.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createAgent, ResumeError } from '@shallot/agent'
import { defineTool, OptionsError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import Database from 'better-sqlite3'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type SqliteCheckpoints, sqliteCheckpoints } from './index.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'shallot-sqlite-claims-'))
let files = 0
const file = () => join(dir, `claims-${++files}.db`)
afterAll(() => rmSync(dir, { recursive: true, force: true }))
afterEach(() => {
  vi.useRealTimers()
})

/** The run ids with a claim row in the default claims table, sorted. */
function claimRows(store: SqliteCheckpoints): string[] {
  const rows = store.database.prepare('SELECT run_id FROM "shallot_checkpoints_claims" ORDER BY run_id').all() as { run_id: string }[]
  return rows.map((r) => r.run_id)
}

describe('sqliteCheckpoints claim', () => {
  it('refuses a run held by another connection until the holder releases it; a second release is harmless', () => {
    const path = file()
    const a = sqliteCheckpoints({ path })
    const b = sqliteCheckpoints({ path })
    const release = a.claim('run-1')
    expect(release).toBeTypeOf('function')
    expect(b.claim('run-1')).toBeUndefined()
    expect(a.claim('run-1')).toBeUndefined()
    expect(b.claim('run-2')).toBeTypeOf('function')
    release?.()
    release?.()
    const again = b.claim('run-1')
    expect(again).toBeTypeOf('function')
    expect(a.claim('run-1')).toBeUndefined()
    a.close()
    b.close()
  })

  it('gives one run to exactly one of ten connections claiming it together, and takes __proto__ as a plain id', () => {
    const path = file()
    const stores = Array.from({ length: 10 }, () => sqliteCheckpoints({ path }))
    const won = stores.map((s) => s.claim('__proto__')).filter((r) => r !== undefined)
    expect(won).toHaveLength(1)
    expect(Object.prototype).not.toHaveProperty('holder')
    for (const s of stores) s.close()
  })

  it('makes agent.resume from another connection reject run_in_progress, with nothing run, while a run is held', async () => {
    const path = file()
    const ran: string[] = []
    const note = defineTool({
      name: 'write_note',
      description: 'Write a note',
      effect: 'write',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => void ran.push(text),
    })
    const script = [{ toolCalls: [{ name: 'write_note', args: { text: 'one' } }] }, { text: 'done' }]
    const first = sqliteCheckpoints({ path })
    await createAgent({ model: scriptedModel(script), tools: [note], checkpoints: first, limits: { maxTurns: 1 } }).run({
      runId: 'held',
      input: 'write',
    })
    expect(ran).toEqual(['one'])
    const release = first.claim('held')
    const other = sqliteCheckpoints({ path })
    const resumed = createAgent({ model: scriptedModel(script.slice(1)), tools: [note], checkpoints: other }).resume('held')
    await expect(resumed).rejects.toSatisfy((err) => ResumeError.is(err) && err.code === 'run_in_progress')
    release?.()
    const done = await createAgent({ model: scriptedModel(script.slice(1)), tools: [note], checkpoints: other }).resume('held')
    expect(done).toMatchObject({ status: 'completed', output: 'done' })
    // The resume gave its claim back: the first connection may take the run again.
    expect(first.claim('held')).toBeTypeOf('function')
    expect(ran).toEqual(['one'])
    first.close()
    other.close()
  })

  it('renews a held claim, and lets one lapse after claimLeaseMs once its holder stops renewing; a stale release frees nothing', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const path = file()
    const a = sqliteCheckpoints({ path, claimLeaseMs: 1000 })
    const b = sqliteCheckpoints({ path, claimLeaseMs: 1000 })
    const stale = a.claim('run-1')
    vi.advanceTimersByTime(5000)
    expect(b.claim('run-1')).toBeUndefined()
    a.close() // stops renewing without releasing, as a process frozen past its lease would
    // Renewed last at most a third of the lease ago: held a while yet, free once a whole lease has passed.
    vi.advanceTimersByTime(600)
    expect(b.claim('run-1')).toBeUndefined()
    vi.advanceTimersByTime(400)
    const taken = b.claim('run-1')
    expect(taken).toBeTypeOf('function')
    const c = sqliteCheckpoints({ path })
    stale?.()
    expect(c.claim('run-1')).toBeUndefined()
    b.close()
    c.close()
  })

  it('frees the claim of a process that died holding it at once, without waiting for the lease', async () => {
    const path = file()
    const script = `import { sqliteCheckpoints } from ${JSON.stringify(join(packageDir, 'dist/index.js'))}
      sqliteCheckpoints({ path: ${JSON.stringify(path)} }).claim('run-1'); process.kill(process.pid, 'SIGKILL')`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: packageDir, stdio: 'ignore' })
    const signal = await new Promise((resolve) => child.once('close', (_code, sig) => resolve(sig)))
    expect(signal).toBe('SIGKILL')
    const store = sqliteCheckpoints({ path })
    expect(store.claim('run-1')).toBeTypeOf('function')
    store.close()
  })

  it('deletes lapsed claims whenever a claim is taken, and keeps a renewed one', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const path = file()
    const dead = sqliteCheckpoints({ path, claimLeaseMs: 1000 })
    const live = sqliteCheckpoints({ path, claimLeaseMs: 1000 })
    const other = sqliteCheckpoints({ path, claimLeaseMs: 1000 })
    dead.claim('lapsed')
    const held = live.claim('live')
    dead.close() // stops renewing without releasing, as a process frozen or killed would (this one's pid still runs)
    vi.advanceTimersByTime(999)
    const taken = other.claim('other')
    expect(claimRows(other)).toEqual(['lapsed', 'live', 'other']) // 1 ms of lease left: kept
    vi.advanceTimersByTime(1)
    const again = other.claim('another')
    expect(claimRows(other)).toEqual(['another', 'live', 'other'])
    vi.advanceTimersByTime(5000) // the live holders renew
    expect(other.claim('live')).toBeUndefined()
    expect(claimRows(other)).toEqual(['another', 'live', 'other'])
    for (const release of [held, taken, again]) release?.()
    expect(claimRows(other)).toEqual([])
    live.close()
    other.close()
  })

  it('takes over and sweeps claim rows it did not write: an expiry that is not a number, a pid of 0, -1 or text', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const path = file()
    const store = sqliteCheckpoints({ path })
    store.claim('made') // creates the table
    const far = Date.now() + 3_600_000
    const plant = store.database.prepare('INSERT INTO "shallot_checkpoints_claims" (run_id, holder, pid, expires_at) VALUES (?, ?, ?, ?)')
    plant.run('text-expiry', 'x', process.pid, 'garbage')
    plant.run('infinite', 'x', process.pid, 'Infinity')
    plant.run('blob-expiry', 'x', process.pid, Buffer.from('9999999999999'))
    for (const [run, pid] of [
      ['pid-0', 0],
      ['pid-minus-1', -1],
      ['pid-text', 'me'],
      ['pid-float', 1.5],
    ] as const)
      plant.run(run, 'x', pid, far)
    const next = store.claim('next') // sweeps the three rows whose expiry is not a number
    expect(claimRows(store)).toEqual(['made', 'next', 'pid-0', 'pid-float', 'pid-minus-1', 'pid-text'])
    // A pid that names no single process holds nothing: each of those runs is free to take.
    const took = ['pid-0', 'pid-minus-1', 'pid-text', 'pid-float'].map((run) => store.claim(run))
    expect(took.every((release) => typeof release === 'function')).toBe(true)
    for (const release of [next, ...took]) release?.()
    expect(claimRows(store)).toEqual(['made'])
    store.close()
  })

  it('holds a claim on a connection that reads integers as bigint (safe integers on)', () => {
    const path = file()
    const safe = (database: Database.Database) => {
      database.defaultSafeIntegers(true)
      return sqliteCheckpoints({ database })
    }
    const [a, b] = [safe(new Database(path)), safe(new Database(path))] as const
    const release = a.claim('run-1')
    expect(release).toBeTypeOf('function')
    expect(b.claim('run-1')).toBeUndefined()
    release?.()
    expect(b.claim('run-1')).toBeTypeOf('function')
    a.close()
    b.close()
    a.database.close()
    b.database.close()
  })

  it('refuses a claim lease that is not a whole number of ms from 100, naming the option', () => {
    for (const claimLeaseMs of [0, 50, Number.NaN, 1.5, -1]) {
      expect(() => sqliteCheckpoints({ path: file(), claimLeaseMs })).toThrow(OptionsError)
      expect(() => sqliteCheckpoints({ path: file(), claimLeaseMs })).toThrow(/claimLeaseMs/)
    }
  })
})
