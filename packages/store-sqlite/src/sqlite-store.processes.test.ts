// Several real processes on one SQLite file. The workers (test/worker.mjs) import the BUILT packages
// (dist), which vitest's global setup builds before any test file starts (.ci/vitest-build.ts). No
// test here sleeps: each awaits real child processes to exit.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workerPath = join(packageDir, 'test', 'worker.mjs')

interface CallLine {
  ok: boolean
  replayed: boolean
  value?: { chargeId: string; amount: number }
  code?: string
  events: string[]
}

interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
  lines: CallLine[]
  stderr: string
}

interface WorkerConfig {
  db: string
  runId: string
  mode?: 'crash-after-effect' | 'kill-after-complete'
  calls?: number
  leaseMs?: number
  waitMs?: number
  pollMs?: number
  holdMs?: number
  barrier?: boolean
}

function startWorker(config: WorkerConfig): { child: ChildProcessWithoutNullStreams; ready: Promise<void>; exit: Promise<Exit> } {
  const child = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  let stdout = ''
  let stderr = ''
  let markReady!: () => void
  const ready = new Promise<void>((resolve) => {
    markReady = resolve
  })
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    if (stdout.startsWith('ready\n')) markReady()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exit = new Promise<Exit>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as CallLine)
      resolve({ code, signal, lines, stderr })
    })
  })
  return { child, ready, exit }
}

async function runWorker(config: WorkerConfig): Promise<Exit> {
  return startWorker(config).exit
}

function effects(db: string, runId: string): number {
  const connection = new Database(db, { readonly: true })
  try {
    return (connection.prepare('SELECT count(*) AS n FROM effects WHERE run = ?').get(runId) as { n: number }).n
  } finally {
    connection.close()
  }
}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shallot-sqlite-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('sqliteStore across processes', () => {
  it('runs the tool once for 50 concurrent identical write calls spread over 4 processes on one file', async () => {
    const db = join(dir, 'burst.db')
    const workers = [13, 13, 12, 12].map((calls) =>
      startWorker({ db, runId: 'run-burst', calls, barrier: true, holdMs: 300, pollMs: 20, waitMs: 20_000 }),
    )
    await Promise.all(workers.map((w) => w.ready))
    for (const w of workers) w.child.stdin.end('go\n')
    const exits = await Promise.all(workers.map((w) => w.exit))
    for (const exit of exits) expect(exit, exit.stderr).toMatchObject({ code: 0, signal: null })
    const lines = exits.flatMap((exit) => exit.lines)
    expect(lines).toHaveLength(50)
    expect(lines.every((line) => line.ok)).toBe(true)
    expect(lines.filter((line) => !line.replayed)).toHaveLength(1)
    expect(exits.filter((exit) => exit.lines.every((line) => line.replayed))).toHaveLength(3)
    expect(new Set(lines.map((line) => line.value?.chargeId)).size).toBe(1)
    expect(effects(db, 'run-burst')).toBe(1)
  }, 60_000)

  it('refuses the identical call as outcome_unknown after a worker was SIGKILLed between side effect and complete', async () => {
    const db = join(dir, 'crash.db')
    const crashed = await runWorker({ db, runId: 'run-crash', mode: 'crash-after-effect', leaseMs: 300 })
    expect(crashed.signal).toBe('SIGKILL')
    expect(crashed.lines).toEqual([])
    expect(effects(db, 'run-crash')).toBe(1)

    const restarted = await runWorker({ db, runId: 'run-crash', leaseMs: 300, pollMs: 20, waitMs: 20_000 })
    expect(restarted, restarted.stderr).toMatchObject({ code: 0 })
    expect(restarted.lines).toEqual([expect.objectContaining({ ok: false, code: 'outcome_unknown' })])
    expect(effects(db, 'run-crash')).toBe(1)
  }, 60_000)

  it('replays instead of charging again when a run killed after complete is resumed in a new process', async () => {
    const db = join(dir, 'resume.db')
    const killed = await runWorker({ db, runId: 'run-resume', mode: 'kill-after-complete' })
    expect(killed.signal).toBe('SIGKILL')
    expect(killed.lines).toEqual([expect.objectContaining({ ok: true, replayed: false })])

    const resumed = await runWorker({ db, runId: 'run-resume' })
    expect(resumed, resumed.stderr).toMatchObject({ code: 0 })
    expect(resumed.lines).toEqual([expect.objectContaining({ ok: true, replayed: true, value: killed.lines[0]?.value })])
    expect(effects(db, 'run-resume')).toBe(1)
  }, 60_000)
})
