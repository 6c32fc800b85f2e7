import { type Agent, type CheckpointStore, type ParkingOutcome, ResumeError, type RunOutcome } from '@shallot/agent'
import { type Logger, LoopError, parseOptions, silentLogger, ToolError } from '@shallot/core'
import { callListener } from '@shallot/core/kit'
import { type ConnectionOptions, DelayedError, type Job, type RateLimiterOptions, UnrecoverableError, Worker } from 'bullmq'
import { z } from 'zod'
import { type RunJob, type RunJobResult, runJobSchema } from './run-job.js'

const isObject = (v: unknown) => typeof v === 'object' && v !== null
const ms = (what: string) =>
  z
    .number({ error: `must be a number of ms (${what})` })
    .int()
    .positive()

const workerOptionsSchema = z.strictObject({
  name: z.string().min(1).max(200),
  connection: z.custom<ConnectionOptions>(isObject, 'must be Redis connection options { host, port } or a client'),
  /** The agent that runs each job; create it with the shared `checkpoints` (and `park`, so long waits become delayed jobs). */
  agent: z.custom<Agent<ParkingOutcome>>(
    (v) => isObject(v) && typeof (v as Agent).run === 'function' && typeof (v as Agent).resume === 'function',
    'must be an agent from createAgent({ checkpoints, park })',
  ),
  /** The agent's checkpoint store, shared by every worker: a job starts a run it has no checkpoint of, and resumes any other. */
  checkpoints: z.custom<CheckpointStore>(
    (v) => isObject(v) && typeof (v as CheckpointStore).load === 'function' && typeof (v as CheckpointStore).save === 'function',
    "must be the agent's checkpoint store { save, load }, shared by every worker (e.g. postgresStores().checkpoints)",
  ),
  prefix: z.string().min(1).optional(),
  /** Runs at once in this worker (BullMQ's `concurrency`). Default 1. */
  concurrency: z.number().int().positive().max(10_000).optional(),
  /** BullMQ's rate limiter for the queue: at most `max` runs started per `duration` ms, fleet-wide. */
  limiter: z
    .custom<RateLimiterOptions>(
      (v) => isObject(v) && Number.isInteger((v as RateLimiterOptions).max) && Number.isInteger((v as RateLimiterOptions).duration),
      'must be { max, duration }: at most max jobs per duration ms',
    )
    .optional(),
  /** How long a job stays locked to a worker without a renewal; a crashed worker's runs are taken over after it. Default 30000. */
  lockDuration: ms('the lock of a running job').optional(),
  /** How often workers look for jobs whose lock expired. Default 30000. */
  stalledInterval: ms('between stalled-job checks').optional(),
  /** Take-overs of one job before it is failed. Default 1. */
  maxStalledCount: z.number().int().min(0).max(1000).optional(),
  /** Called with each run's outcome (parked ones too); a listener that throws is logged, never fails the job. */
  onOutcome: z.custom<(outcome: ParkingOutcome, job: Job<RunJob>) => void>((v) => typeof v === 'function').optional(),
  logger: z.custom<Logger>((v) => isObject(v) && typeof (v as Logger).warn === 'function').optional(),
  /** Start taking jobs at once. Default true; false: call `worker.run()`. */
  autorun: z.boolean().optional(),
})

export type AgentWorkerOptions = z.input<typeof workerOptionsSchema>

export interface AgentWorker {
  readonly worker: Worker<RunJob, RunJobResult>
  /** Stops taking jobs and waits for the running ones (BullMQ's graceful close). */
  close(): Promise<void>
}

function resultOf(outcome: RunOutcome): RunJobResult {
  if (outcome.status === 'completed') {
    return { status: 'completed', runId: outcome.runId, output: outcome.output, turns: outcome.turns, steps: outcome.steps }
  }
  return { status: 'stopped', runId: outcome.runId, kind: outcome.error.kind, message: outcome.error.message, turns: outcome.turns }
}

const isCheckpointFailure = (err: unknown): err is LoopError =>
  LoopError.is(err) && err.kind === 'fatal' && typeof err.details.checkpoint === 'string'

/**
 * A store the run needs is down or did not answer in time (`store_unavailable` and other transient
 * errors, or a checkpoint that could not be saved because of one): the run is fine, its store is not.
 */
function storeDown(err: unknown): boolean {
  if (ToolError.is(err)) return err.category === 'transient'
  return isCheckpointFailure(err) && ToolError.is(err.cause) && err.cause.category === 'transient'
}

/**
 * A BullMQ worker that runs agent runs: a job without a checkpoint starts its run, any other
 * resumes it from the shared store, so a job taken over from a crashed worker (BullMQ's stalled-job
 * check, after `lockDuration`) continues at its last checkpoint, and the idempotency layer's shared
 * records keep every completed write from running twice. A run that parks becomes a delayed job at
 * its `wakeAt` and holds no worker while it waits. Concurrency and rate limits are BullMQ's own.
 *
 * @example
 * const { checkpoints, idempotency: store } = postgresStores({ pool })
 * const agent = createAgent({ model, tools, middleware: [idempotency({ store }), retry()], checkpoints, park: { afterMs: 5000 } })
 * const worker = agentWorker({ name: 'agents', connection: { host: '127.0.0.1', port: 6379 }, agent, checkpoints, concurrency: 8 })
 */
export function agentWorker(options: AgentWorkerOptions): AgentWorker {
  const opts = parseOptions('agentWorker()', workerOptionsSchema, options)
  const { agent, checkpoints, onOutcome } = opts
  const log = opts.logger ?? silentLogger
  const lockMs = opts.lockDuration ?? 30_000
  const storeWaitMs = Math.min(lockMs, 5000)

  /**
   * BullMQ renews a running job's lock when its wall clock says a renewal is due: on a host whose clock
   * steps back, the renewals stop for as long as the step, and another worker's stalled-job check hands
   * the run on while it runs here. A timer, which no wall clock moves, renews the lock as well.
   */
  async function runJob(job: Job<RunJob>, token?: string): Promise<RunJobResult> {
    const keeper =
      token === undefined
        ? undefined
        : setInterval(() => {
            job.extendLock(token, lockMs).catch(() => {})
          }, lockMs / 2)
    keeper?.unref()
    try {
      return await driveJob(job, token)
    } finally {
      clearInterval(keeper)
    }
  }

  async function driveJob(job: Job<RunJob>, token?: string): Promise<RunJobResult> {
    const parsed = runJobSchema.safeParse(job.data)
    if (!parsed.success) throw new UnrecoverableError(`job ${job.id} is not a run: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
    const { runId, input } = parsed.data
    let outcome: ParkingOutcome
    try {
      const saved = await checkpoints.load(runId)
      if (saved?.status === 'stopped' && saved.pendingTurn === undefined) {
        // Stopped for good before this take-over: driving it again would undo the stop.
        return { status: 'stopped', runId, kind: null, message: 'the run had stopped before this attempt', turns: saved.turns.length }
      }
      outcome = saved === undefined ? await agent.run({ input, runId }) : await agent.resume(runId)
    } catch (err) {
      if (ResumeError.is(err) && err.code === 'run_in_progress') {
        // Another driver holds the run (a stalled job's first worker, still running it): running it
        // here too would ask the model and dispatch its turn twice. Look again after a lock duration,
        // by when that driver has finished or its claim has lapsed; no attempt is spent.
        log.warn({ runId }, 'run is being driven elsewhere; its job waits a lock duration')
        await job.moveToDelayed(Date.now() + lockMs, token)
        throw new DelayedError()
      }
      if (storeDown(err)) {
        // Waiting spends none of the job's attempts: three attempts 1 and 2 s apart would end runs for
        // good in a three-second database restart. The run resumes from its last saved checkpoint.
        log.warn({ runId, err }, 'a store the run needs is unavailable; its job waits and tries again')
        await job.moveToDelayed(Date.now() + storeWaitMs, token)
        throw new DelayedError()
      }
      // A checkpoint that could not be saved otherwise may save on another attempt; a corrupt record or a bad job never will.
      if (isCheckpointFailure(err)) throw err
      const message = err instanceof Error ? err.message : String(err)
      log.warn({ runId, err }, 'run cannot go on; its job fails without retries')
      throw new UnrecoverableError(`run "${runId}": ${message}`)
    }
    // A listener that throws, or an async one that rejects, is logged: it never fails the job nor ends the process.
    if (onOutcome !== undefined)
      callListener(
        (told: ParkingOutcome) => onOutcome(told, job),
        outcome,
        (err) => log.warn({ runId, err }, 'agentWorker onOutcome listener threw'),
      )
    if (outcome.status === 'parked') {
      // The job waits in Redis, not in this process: BullMQ hands it to a worker at wakeAt.
      await job.moveToDelayed(outcome.wakeAt, token)
      throw new DelayedError()
    }
    return resultOf(outcome)
  }

  const worker = new Worker<RunJob, RunJobResult>(opts.name, runJob, {
    connection: opts.connection,
    ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }),
    ...(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency }),
    ...(opts.limiter === undefined ? {} : { limiter: opts.limiter }),
    ...(opts.lockDuration === undefined ? {} : { lockDuration: opts.lockDuration }),
    ...(opts.stalledInterval === undefined ? {} : { stalledInterval: opts.stalledInterval }),
    ...(opts.maxStalledCount === undefined ? {} : { maxStalledCount: opts.maxStalledCount }),
    ...(opts.autorun === undefined ? {} : { autorun: opts.autorun }),
  })
  // Without a listener an 'error' event (Redis gone for a moment) would crash the process.
  worker.on('error', (err) => log.warn({ err }, 'BullMQ worker error'))
  return { worker, close: () => worker.close() }
}
