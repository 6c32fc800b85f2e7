// The soak: private Redis (AOF on) and PostgreSQL on loopback ports, a fleet of worker processes,
// runs enqueued and faults injected on the seeded schedule, then the history gathered for the checker.
import { agentQueue, type RunJobResult } from '@shallot/bullmq'
import { postgresStores } from '@shallot/store-postgres'
import { QueueEvents } from 'bullmq'
import pg from 'pg'
import { type PostgresServer, startPostgresServer } from '../../packages/store-postgres/src/test-support/postgres-server.js'
import { type RedisServer, startRedisServer } from '../../packages/store-redis/src/test-support/redis-server.js'
import type { ApprovalRow, History, JobFinal, LedgerRow, ToolOutcome } from './checker.js'
import { type FleetProcess, killProcess, startProcess, stopProcess } from './fleet.js'
import { type Fault, type FaultKind, type SoakShape, soakSchedule } from './schedule.js'
import type { WorkerConfig } from './worker.js'
import { worldTables } from './world.js'

export interface SoakResult {
  readonly history: History
  readonly faults: Readonly<Record<FaultKind, number>>
  readonly stalled: number
  /** Turns whose model call was answered more than once (a redone turn, or two workers on one run). */
  readonly repeatedModelTurns: number
  readonly wallMs: number
}

const PREFIX = 'chaos_'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(check: () => Promise<boolean>, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true
    await sleep(250)
  }
  return false
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

interface Rig {
  readonly redis: RedisServer
  readonly postgres: PostgresServer
  readonly fleet: FleetProcess[]
  readonly config: WorkerConfig
}

/** One fault; server faults of one kind never overlap (the caller chains them). */
async function inject(rig: Rig, fault: Fault): Promise<void> {
  const index = fault.worker % rig.fleet.length
  const proc = rig.fleet[index] as FleetProcess
  switch (fault.kind) {
    case 'worker_kill':
      await killProcess(proc)
      rig.fleet[index] = await startProcess(rig.config)
      return
    case 'worker_pause':
      proc.child.kill('SIGSTOP')
      await sleep(fault.ms)
      proc.child.kill('SIGCONT')
      return
    case 'clock_jump':
      proc.child.stdin.write(`${JSON.stringify({ jump: fault.ms })}\n`)
      return
    case 'redis_kill': {
      const pid = rig.redis.pid
      process.kill(pid, 'SIGKILL')
      await until(async () => gone(pid), Date.now() + 10_000)
      await sleep(fault.ms)
      await rig.redis.restart()
      return
    }
    case 'postgres_stop':
      await rig.postgres.stop('immediate')
      await sleep(fault.ms)
      await rig.postgres.start()
      return
  }
}

async function gather(rig: Rig, shape: SoakShape, plans: History['plans']): Promise<Omit<History, 'boundMs'>> {
  const pool = new pg.Pool({ connectionString: rig.postgres.url, max: 4 })
  pool.on('error', () => {})
  const connection = { host: '127.0.0.1', port: rig.redis.port, maxRetriesPerRequest: null }
  const runs = agentQueue({ name: `chaos${shape.seed}`, connection })
  runs.queue.on('error', () => {})
  const stores = postgresStores({ pool, tablePrefix: PREFIX })
  try {
    const jobs = new Map<string, JobFinal>()
    const outcomes = new Map<string, ToolOutcome[]>()
    for (const plan of plans) {
      const job = await runs.queue.getJob(plan.runId)
      if (job !== undefined) {
        const state = await job.getState()
        const result = job.returnvalue as RunJobResult | null
        jobs.set(plan.runId, {
          state,
          ...(result === null || result === undefined
            ? {}
            : { status: result.status, kind: result.status === 'stopped' ? result.kind : null }),
          ...(job.failedReason ? { failedReason: job.failedReason } : {}),
          enqueuedAt: job.timestamp,
          ...(job.finishedOn === undefined ? {} : { finishedAt: job.finishedOn }),
        })
      }
      const snapshot = await stores.checkpoints.load(plan.runId)
      const tools = (snapshot?.transcript ?? []).flatMap((m) => (m.role === 'tool' ? [{ name: m.name, ok: m.ok, content: m.content }] : []))
      outcomes.set(plan.runId, tools)
    }
    const ledger = (await pool.query<LedgerRow>(`SELECT run_id, tool, call_id, idem_key, args FROM ${PREFIX}ledger ORDER BY id`)).rows
    const approvals = (await pool.query<ApprovalRow>(`SELECT run_id, call_id, tool, args, answer FROM ${PREFIX}approvals ORDER BY id`)).rows
    return { plans, jobs, ledger, approvals, outcomes }
  } finally {
    await runs.close()
    await pool.end()
  }
}

export interface SoakOptions extends SoakShape {
  /** Each run must be terminal within this many ms of its enqueue. */
  readonly boundMs: number
  readonly concurrency: number
  readonly log: (line: string) => void
}

/**
 * Runs one soak from its seed and returns its history and what was injected; the checker judges it.
 *
 * @example
 * const result = await runSoak({ seed: 1, runs: 60, workers: 3, spanMs: 30_000, faults: 6, lockMs: 2000, boundMs: 60_000, concurrency: 8, log: console.log })
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const started = Date.now()
  const { runs: plans, faults } = soakSchedule(options)
  const [redis, postgres] = await Promise.all([startRedisServer({ persist: true }), startPostgresServer()])
  const fleet: FleetProcess[] = []
  const rig: Rig = {
    redis,
    postgres,
    fleet,
    config: {
      redisPort: redis.port,
      pgUrl: postgres.url,
      prefix: PREFIX,
      queue: `chaos${options.seed}`,
      concurrency: options.concurrency,
      lockMs: options.lockMs,
      stalledMs: Math.floor(options.lockMs / 2),
      leaseMs: 1500,
      parkMs: 1000,
      holdMs: 100,
    },
  }
  const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
  let events: QueueEvents | undefined
  const runs = agentQueue({ name: rig.config.queue, connection, jobOptions: { attempts: 30, backoff: { type: 'fixed', delay: 1000 } } })
  // Redis is killed on purpose: its clients reconnect, and their 'error' events must not print or crash.
  runs.queue.on('error', () => {})
  try {
    await setUp(rig)
    for (let i = 0; i < options.workers; i++) fleet.push(await startProcess(rig.config))
    events = new QueueEvents(rig.config.queue, { connection })
    let stalled = 0
    events.on('stalled', () => stalled++)
    events.on('error', () => {})
    const counts = await drive(rig, runs.enqueue, plans, faults, options)
    const deadline = Date.now() + options.boundMs
    const settled = await until(async () => {
      const c = await runs.queue.getJobCounts('completed', 'failed')
      return (c.completed ?? 0) + (c.failed ?? 0) >= plans.length
    }, deadline)
    if (!settled) options.log(`not every run was terminal ${options.boundMs} ms after the last enqueue`)
    const gathered = await gather(rig, options, plans)
    const repeatedModelTurns = await repeatedTurns(postgres.url)
    return { history: { ...gathered, boundMs: options.boundMs }, faults: counts, stalled, repeatedModelTurns, wallMs: Date.now() - started }
  } finally {
    await events?.close().catch(() => {})
    await runs.close().catch(() => {})
    await Promise.all(fleet.map((proc) => stopProcess(proc, 5000)))
    await Promise.all([redis.close(), postgres.close()])
  }
}

async function setUp(rig: Rig): Promise<void> {
  const pool = new pg.Pool({ connectionString: rig.postgres.url, max: 2 })
  try {
    await postgresStores({ pool, tablePrefix: PREFIX }).migrate()
    for (const sql of worldTables(PREFIX)) await pool.query(sql)
  } finally {
    await pool.end()
  }
}

async function repeatedTurns(url: string): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  try {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM ${PREFIX}model_calls GROUP BY run_id, turn HAVING count(*) > 1) t`,
    )
    return Number(rows[0]?.n ?? 0)
  } finally {
    await pool.end()
  }
}

/** Enqueues each run and injects each fault at its time; resolves when every fault is over. */
async function drive(
  rig: Rig,
  enqueue: (run: { input: string; runId: string }) => Promise<string>,
  plans: History['plans'],
  faults: readonly Fault[],
  options: SoakOptions,
): Promise<Record<FaultKind, number>> {
  const start = Date.now()
  const counts: Record<FaultKind, number> = { worker_kill: 0, worker_pause: 0, redis_kill: 0, postgres_stop: 0, clock_jump: 0 }
  const chains = new Map<string, Promise<void>>()
  const pending: Promise<unknown>[] = []
  const timeline = [
    ...plans.map((plan) => ({ at: plan.enqueueAt, act: () => pending.push(enqueue({ runId: plan.runId, input: JSON.stringify(plan) })) })),
    ...faults.map((fault) => ({
      at: fault.at,
      act: () => {
        // Faults on one server or one worker slot wait for the previous one there to be over.
        const lane = fault.kind === 'redis_kill' || fault.kind === 'postgres_stop' ? fault.kind : `worker${fault.worker % rig.fleet.length}`
        const next = (chains.get(lane) ?? Promise.resolve()).then(() => {
          counts[fault.kind]++
          options.log(
            `${((Date.now() - start) / 1000).toFixed(1)} s: ${fault.kind} ${fault.kind.startsWith('worker') || fault.kind === 'clock_jump' ? `worker ${fault.worker % rig.fleet.length} ` : ''}${fault.ms} ms`,
          )
          return inject(rig, fault)
        })
        chains.set(lane, next)
        pending.push(next)
      },
    })),
  ].sort((a, b) => a.at - b.at)
  for (const event of timeline) {
    const wait = start + event.at - Date.now()
    if (wait > 0) await sleep(wait)
    event.act()
  }
  await Promise.all(pending)
  return counts
}
