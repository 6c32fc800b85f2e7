// The soak: the rig started, runs enqueued (some twice) and faults injected on the seeded schedule,
// then, once every run is over, the history gathered for the checker.
import { agentQueue } from '@shallot/bullmq'
import { type ConnectionOptions, type Queue, QueueEvents } from 'bullmq'
import type { History } from './checker.js'
import { gather } from './gather.js'
import { type FailoverLoss, inject, laneOf } from './inject.js'
import { type Rig, startRig } from './rig.js'
import { FAULT_KINDS, type FaultKind, type RunPlan, type Schedule, type SoakShape, soakSchedule } from './schedule.js'

export interface SoakResult {
  readonly schedule: Schedule
  readonly history: History
  readonly faults: Readonly<Record<FaultKind, number>>
  /** Per failover: the WAL, the world's requests and the writes the promoted replica never had. */
  readonly failovers: readonly FailoverLoss[]
  readonly stalled: number
  /** Each job's events (`<seconds> active|delayed|stalled|completed|failed`), as the queue reported them. */
  readonly timelines: ReadonlyMap<string, readonly string[]>
  /** Worker processes that died on their own (the planted ones, whose plant kills them) and were replaced. */
  readonly crashes: number
  /** Graceful stops (SIGTERM, rolling restarts) that outlasted their grace and were SIGKILLed. */
  readonly forcedStops: number
  readonly repeatedModelTurns: number
  readonly wallMs: number
}

export interface SoakOptions extends SoakShape {
  /** Each run must be terminal within this many ms of its enqueue. */
  readonly boundMs: number
  readonly concurrency: number
  readonly log: (line: string) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** A graceful stop's grace before SIGKILL: longer than any tool or model deadline. */
const GRACE_MS = 20_000

async function until(check: () => Promise<boolean>, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true
    await sleep(250)
  }
  return false
}

/** Adds a run's job: its first, the same run id again, or the run under a job id of its own. */
type Enqueue = (plan: RunPlan, how: 'first' | 'again' | 'own_id') => Promise<unknown>

/** Enqueues each run (and its duplicates) and injects each fault at its time; resolves when every fault is over. */
async function drive(rig: Rig, schedule: Schedule, enqueue: Enqueue, apart: Exclusive, log: (line: string) => void) {
  const start = Date.now()
  const counts = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>
  const failovers: FailoverLoss[] = []
  const lanes = new Map<string, Promise<unknown>>()
  const pending: Promise<unknown>[] = []
  const later = (ms: number, act: () => Promise<unknown>) => pending.push(sleep(ms).then(act))
  const timeline = [
    ...schedule.runs
      .filter((plan) => plan.plant === undefined)
      .map((plan) => ({
        at: plan.enqueueAt,
        act: () => {
          pending.push(enqueue(plan, 'first'))
          // A producer's retry: the same run id again (one job), or under a job id of its own at once (two jobs of one run).
          if (plan.duplicate === 'same_id') later(500, () => enqueue(plan, 'again'))
          if (plan.duplicate === 'own_id') pending.push(enqueue(plan, 'own_id'))
        },
      })),
    ...schedule.faults.map((fault) => ({
      at: fault.at,
      act: () => {
        const lane = laneOf(fault)
        const next = (lane === undefined ? Promise.resolve() : (lanes.get(lane) ?? Promise.resolve())).then(async () => {
          const faultNow = async () => {
            counts[fault.kind]++
            log(
              `${((Date.now() - start) / 1000).toFixed(1)} s: ${fault.kind}${lane === undefined ? ` worker ${fault.worker % rig.fleet.size}` : ''} ${fault.ms} ms`,
            )
            const loss = await inject(rig, fault, GRACE_MS)
            if (loss !== undefined) failovers.push(loss)
          }
          // A planted run must meet no server fault: a failover would roll its writes back, an outage cut its drives short.
          await (lane === undefined ? faultNow() : apart(faultNow))
        })
        if (lane !== undefined) lanes.set(lane, next)
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
  return { counts, failovers }
}

/** Runs `work` while no other work of the same exclusion runs. */
type Exclusive = (work: () => Promise<void>) => Promise<void>

function exclusion(): Exclusive {
  let tail = Promise.resolve()
  return (work) => {
    const turn = tail.then(work)
    tail = turn.catch(() => {})
    return turn
  }
}

/**
 * The planted runs, one after another (each enqueued at its time, once the one before has finished),
 * each apart from the server faults: a plant that kills its worker must not kill another plant's drive,
 * a failover must not roll a plant's writes back, and an outage must not cut a plant's drives short.
 */
async function plantInTurn(plans: readonly RunPlan[], enqueue: Enqueue, queue: Queue, apart: Exclusive, start: number): Promise<void> {
  const over = async (jobId: string) => ['completed', 'failed'].includes(await queue.getJobState(jobId).catch(() => 'unknown'))
  for (const plan of plans) {
    await sleep(start + plan.enqueueAt - Date.now())
    await apart(async () => {
      await enqueue(plan, 'first')
      if (plan.duplicate === 'own_id') await enqueue(plan, 'own_id')
      const jobs = plan.duplicate === 'own_id' ? [plan.runId, `${plan.runId}.again`] : [plan.runId]
      await until(async () => (await Promise.all(jobs.map(over))).every(Boolean), Date.now() + 60_000)
    })
  }
}

/**
 * Runs one soak from its seed and returns its history and what was injected; the checker judges it.
 *
 * @example
 * const result = await runSoak({ seed: 1, runs: 300, workers: 3, spanMs: 15_000, faults: 20, lockMs: 2000, boundMs: 60_000, concurrency: 16, log: console.error })
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const started = Date.now()
  const schedule = soakSchedule(options)
  const rig = await startRig({
    queue: `chaos${options.seed}`,
    workers: options.workers,
    skews: schedule.skews,
    concurrency: options.concurrency,
    lockMs: options.lockMs,
    claimMs: 3 * options.lockMs,
    plant: options.plant === true,
  })
  // Stopped from outside (Ctrl-C, a test's timeout), the soak takes its servers and workers down with it.
  const interrupted = () => void rig.close().finally(() => process.exit(130))
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  const connection = { host: '127.0.0.1', port: rig.redis.port, maxRetriesPerRequest: null }
  const t0 = Date.now()
  const main = producer(rig.queue, connection, t0)
  const planted = rig.planted === undefined ? undefined : producer(rig.planted.queue, connection, t0)
  const queueOf = (plan: RunPlan) => (plan.plant === undefined || planted === undefined ? main : planted)
  try {
    const enqueue: Enqueue = (plan, how) => {
      const run = { runId: plan.runId, input: JSON.stringify(plan) }
      const { runs } = queueOf(plan)
      if (how !== 'own_id') return runs.enqueue(run)
      return runs.queue.add('run', run, { attempts: 3, backoff: { type: 'exponential', delay: 1000 }, jobId: `${plan.runId}.again` })
    }
    const plants = schedule.runs.filter((plan) => plan.plant !== undefined)
    const apart = exclusion()
    const plantsDone = planted === undefined ? Promise.resolve() : plantInTurn(plants, enqueue, planted.runs.queue, apart, Date.now())
    const [{ counts, failovers }] = await Promise.all([drive(rig, schedule, enqueue, apart, options.log), plantsDone])
    const jobs = schedule.runs.length + schedule.runs.filter((p) => p.duplicate === 'own_id').length
    const settled = await until(async () => {
      let finished = 0
      for (const { runs } of planted === undefined ? [main] : [main, planted]) {
        const c = await runs.queue.getJobCounts('completed', 'failed')
        finished += (c.completed ?? 0) + (c.failed ?? 0)
      }
      return finished >= jobs
    }, Date.now() + options.boundMs)
    if (!settled) options.log(`not every run was terminal ${options.boundMs} ms after the last enqueue`)
    const { repeatedModelTurns, ...history } = await gather({
      queueOf: (plan) => queueOf(plan).runs.queue,
      pgUrl: rig.cluster.primary.url,
      plans: schedule.runs,
    })
    const timelines = new Map([...main.timelines, ...(planted?.timelines ?? [])])
    return {
      schedule,
      history: {
        ...history,
        forgotten: failovers.flatMap((f) => f.lostWrites),
        forgottenApprovals: failovers.flatMap((f) => f.lostApprovals),
        boundMs: options.boundMs,
      },
      faults: counts,
      failovers,
      stalled: main.stalled(),
      timelines,
      crashes: rig.fleet.crashes + (rig.planted?.fleet.crashes ?? 0),
      forcedStops: rig.fleet.forced,
      repeatedModelTurns,
      wallMs: Date.now() - started,
    }
  } finally {
    process.off('SIGINT', interrupted)
    process.off('SIGTERM', interrupted)
    await Promise.all([main.close(), planted?.close()])
    await rig.close()
  }
}

/** The producer of one queue, and each of its jobs' life as the queue reported it (soak time, seconds). */
function producer(name: string, connection: ConnectionOptions, t0: number) {
  // The producer uses agentQueue's default job options (3 attempts), as a deployment would.
  const runs = agentQueue({ name, connection })
  // Redis is killed on purpose: its clients reconnect, and their 'error' events must not print or crash.
  runs.queue.on('error', () => {})
  const events = new QueueEvents(name, { connection })
  events.on('error', () => {})
  const timelines = new Map<string, string[]>()
  let stalled = 0
  for (const event of ['active', 'delayed', 'stalled', 'completed', 'failed'] as const) {
    events.on(event, ({ jobId }: { jobId: string }) => {
      if (event === 'stalled') stalled++
      const line = timelines.get(jobId) ?? []
      line.push(`${((Date.now() - t0) / 1000).toFixed(1)} ${event}`)
      timelines.set(jobId, line)
    })
  }
  return {
    runs,
    timelines,
    stalled: () => stalled,
    async close() {
      await events.close().catch(() => {})
      await runs.close().catch(() => {})
    },
  }
}
