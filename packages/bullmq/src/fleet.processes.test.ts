// The fleet must-show: 4 worker processes (test/fleet-worker.mjs, on the BUILT packages, which vitest's
// global setup builds first: .ci/vitest-build.ts) take 200 runs from one BullMQ queue on a private redis-server; checkpoints, idempotency records and the
// world (charges) are in a private PostgreSQL. Every run needs one long backoff (a 429 with a 3 s
// Retry-After): it parks, waits as a delayed job, wakes, completes. One worker is SIGKILLed mid-run;
// the others take its runs over from their checkpoints. Real time is unavoidable here (separate
// processes and real servers share no fake clock): the wait is shortened to 3 s, the lock to 2 s,
// and the test waits by polling the queue's counts, never by a fixed sleep.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Queue } from 'bullmq'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStores } from '../../store-postgres/src/index.js'
import { type PostgresServer, startPostgresServer } from '../../store-postgres/src/test-support/postgres-server.js'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { agentQueue } from './index.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workerPath = fileURLToPath(new URL('../test/fleet-worker.mjs', import.meta.url))

const WORKERS = 4
const RUNS = 200
const WAIT_MS = 3000
const LOCK_MS = 2000
const PARK_AFTER_MS = 1000

interface Line {
  runId: string
  call: 'run' | 'resume'
  start: number
  end?: number
  status: string
  /** The agent's last wall-clock read in this call: when a resume of a parked run compared its wakeAt with now. */
  wokeAt?: number
  wakeAt?: number
  waitMs?: number
  output?: string
}

interface FleetWorker {
  child: ChildProcessWithoutNullStreams
  lines: Line[]
  stderr: string
  exited: Promise<unknown>
}

function startWorker(config: object): Promise<FleetWorker> {
  const child = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  const worker: FleetWorker = {
    child,
    lines: [],
    stderr: '',
    exited: new Promise((resolve) => child.once('close', resolve)),
  }
  let buffer = ''
  child.stderr.on('data', (chunk: Buffer) => {
    worker.stderr += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      let end = buffer.indexOf('\n')
      while (end >= 0) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        if (line === 'ready') resolve(worker)
        else if (line.startsWith('{')) worker.lines.push(JSON.parse(line) as Line)
        end = buffer.indexOf('\n')
      }
    })
    void worker.exited.then((code) => reject(new Error(`worker exited before ready (${String(code)}): ${worker.stderr}`)))
  })
}

/** Polls `check` until it holds; the one wait here is between two polls. */
async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Milliseconds [a0, a1] and [b0, b1] share. */
const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0))

let redis: RedisServer
let postgres: PostgresServer
let pool: pg.Pool
let fleet: FleetWorker[] = []
const prefix = 'fleet_'

beforeAll(async () => {
  ;[redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()])
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 })
  pool.on('error', () => {})
  await postgresStores({ pool, tablePrefix: prefix }).migrate()
  await pool.query(`CREATE TABLE ${prefix}charges (id serial PRIMARY KEY, run_id text NOT NULL, cents int NOT NULL, pid int NOT NULL)`)
  await pool.query(`CREATE TABLE ${prefix}quotes (run_id text PRIMARY KEY)`)
}, 120_000)

afterAll(async () => {
  for (const worker of fleet) worker.child.kill('SIGKILL')
  await Promise.all(fleet.map((w) => w.exited))
  await pool?.end()
  await Promise.all([redis?.close(), postgres?.close()])
}, 60_000)

describe('a fleet of 4 BullMQ workers', () => {
  it('parks every run instead of holding a worker, wakes it on time, and finishes a killed worker’s runs without a second charge', async () => {
    const config = {
      redisPort: redis.port,
      pgUrl: postgres.url,
      tablePrefix: prefix,
      queue: 'fleet',
      waitMs: WAIT_MS,
      parkAfterMs: PARK_AFTER_MS,
      holdMs: 150,
      leaseMs: 1500,
      concurrency: 10,
      lockDuration: LOCK_MS,
      stalledInterval: 1000,
    }
    fleet = await Promise.all(Array.from({ length: WORKERS }, () => startWorker(config)))
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
    const runs = agentQueue({ name: 'fleet', connection })
    const queue = new Queue('fleet', { connection })
    try {
      const ids = Array.from({ length: RUNS }, (_, i) => `order-${i}`)
      for (const runId of ids) await runs.enqueue({ runId, input: runId })

      // SIGKILL worker 0 while it holds runs mid-turn: started, not yet answered.
      const victim = fleet[0] as FleetWorker
      const midRun = () => {
        const open = new Map<string, number>()
        for (const line of victim.lines)
          open.set(`${line.runId}:${line.call}`, (open.get(`${line.runId}:${line.call}`) ?? 0) + (line.end === undefined ? 1 : -1))
        return [...open.values()].filter((n) => n > 0).length
      }
      await until(() => victim.lines.filter((l) => l.end !== undefined).length >= 5 && midRun() >= 3, 'worker 0 mid-run', 30_000)
      const inFlightAtKill = midRun()
      victim.child.kill('SIGKILL')
      await victim.exited

      await until(async () => (await queue.getJobCounts('completed')).completed === RUNS, 'every run completed', 50_000)
      const counts = await queue.getJobCounts('completed', 'failed', 'delayed', 'active', 'waiting')
      expect(counts).toMatchObject({ completed: RUNS, failed: 0, delayed: 0, active: 0, waiting: 0 })

      // No write twice: at most one charge per run, in the database.
      const { rows: charged } = await pool.query<{ run_id: string; n: string }>(
        `SELECT run_id, count(*) AS n FROM ${prefix}charges GROUP BY run_id`,
      )
      expect(charged.filter((r) => Number(r.n) > 1)).toEqual([])
      const chargedRuns = charged.length

      const lines = fleet.flatMap((w) => w.lines)
      const finished = lines.filter((l) => l.end !== undefined)
      const parks = finished.filter((l) => l.status === 'parked')
      // Every run parked (an early wake answers parked again, so count runs, not lines), except one
      // whose first turn died with the killed worker after its 429: the run taken over redoes that
      // turn, and the quote API, having rate-limited it once already, answers.
      const parkedRuns = new Set(parks.map((l) => l.runId))
      const killedMidTurn = new Set(
        victim.lines
          .filter(
            (l) =>
              l.end === undefined &&
              !victim.lines.some((m) => m !== l && m.runId === l.runId && m.call === l.call && m.end !== undefined && m.start === l.start),
          )
          .map((l) => l.runId),
      )
      for (const id of ids) if (!parkedRuns.has(id)) expect(killedMidTurn.has(id)).toBe(true)
      expect(parkedRuns.size).toBeGreaterThanOrEqual(RUNS - inFlightAtKill)
      const windows = new Map<string, { parkedAt: number; wakeAt: number }>()
      for (const p of parks) {
        // From the moment the agent call that parked returned (the worker is free) to wakeAt.
        const w = { parkedAt: p.end as number, wakeAt: p.wakeAt as number }
        const seen = windows.get(p.runId)
        if (seen === undefined || w.wakeAt > seen.wakeAt) windows.set(p.runId, w)
      }
      // Worker-seconds held while runs waited: every agent call's overlap with its run's park window.
      let heldMs = 0
      for (const l of finished) {
        const w = windows.get(l.runId)
        if (w !== undefined) heldMs += overlap(l.start, l.end as number, w.parkedAt, w.wakeAt)
      }
      const waitedMs = [...windows.values()].reduce((sum, w) => sum + (w.wakeAt - w.parkedAt), 0)
      // The cost of parking itself: from parkedAt (stamped before the checkpoint is written) to the worker's release.
      const parkCost = parks.map((p) => (p.end as number) - ((p.wakeAt as number) - (p.waitMs as number))).sort((a, b) => a - b)
      // Woke on time: the resume that completed each run decided to go on after its wakeAt, or less than
      // park.afterMs before it (then it waited out the rest). The decision is the agent's wall-clock read
      // (wokeAt), not the call's start: a resume claims the run and loads its checkpoint first, which under
      // load takes a good part of a second. A completion without a read found its run woken by an earlier
      // call already, which replayed only at wakeAt, so its start is the bound.
      const completions = finished.filter((l) => l.status === 'completed' && windows.has(l.runId))
      const wakeOf = (l: Line) => (windows.get(l.runId) as { wakeAt: number }).wakeAt
      const lateness = completions.map((l) => (l.wokeAt ?? l.start) - wakeOf(l)).sort((a, b) => a - b)
      const startLateness = Math.min(...completions.map((l) => l.start - wakeOf(l)))
      const p50 = lateness[Math.floor(lateness.length / 2)] as number
      const max = lateness[lateness.length - 1] as number
      console.log(
        `fleet: ${RUNS} runs, ${WORKERS} workers; killed worker had ${inFlightAtKill} runs in flight; ` +
          `held during waits ${heldMs} ms of ${waitedMs} ms waited (${((heldMs / waitedMs) * 100).toFixed(3)} %); ` +
          `wake lateness min ${lateness[0]} (call started ${startLateness}) p50 ${p50} ms, max ${max} ms; park checkpoint p50 ${parkCost[Math.floor(parkCost.length / 2)]} ms; parked ${parkedRuns.size} runs (${parks.length} parks, ${parks.filter((p) => p.call === 'resume').length} again on an early resume); runs charged ${chargedRuns}, charged twice 0`,
      )
      expect(new Set(finished.filter((l) => l.status === 'completed').map((l) => l.runId)).size).toBe(RUNS)
      // Never before wakeAt: a resume a little early (under park.afterMs) waits out the rest in the agent.
      for (const l of completions) expect(l.end as number).toBeGreaterThanOrEqual(wakeOf(l))
      expect(lateness[0]).toBeGreaterThan(-PARK_AFTER_MS)
      // A resume earlier than that parks again, as does every park: wakeAt at least park.afterMs after the agent's read.
      const tooEarly = parks.filter((p) => p.wokeAt === undefined || (p.wakeAt as number) - p.wokeAt < PARK_AFTER_MS)
      expect(tooEarly).toEqual([])
      // A killed worker's run waits for its lock to lapse and the stalled check: a few seconds late at most.
      expect(max).toBeLessThan(LOCK_MS + 15_000)
      expect(heldMs / waitedMs).toBeLessThan(0.01)
      // Every run but those caught between charge and its record was charged; none twice.
      expect(chargedRuns).toBeGreaterThanOrEqual(RUNS - inFlightAtKill)
      expect(chargedRuns).toBeLessThanOrEqual(RUNS)
      // The killed worker's runs were finished by the others.
      const survivors = new Set(fleet.slice(1).flatMap((w) => w.lines.filter((l) => l.status === 'completed').map((l) => l.runId)))
      const victimStarted = new Set(victim.lines.map((l) => l.runId))
      const victimCompleted = new Set(victim.lines.filter((l) => l.status === 'completed').map((l) => l.runId))
      const takenOver = [...victimStarted].filter((id) => !victimCompleted.has(id))
      expect(takenOver.length).toBeGreaterThan(0)
      for (const id of takenOver) expect(survivors.has(id)).toBe(true)
    } finally {
      await runs.close()
      await queue.close()
    }
  }, 90_000)
})
