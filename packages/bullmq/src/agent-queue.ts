import { randomUUID } from 'node:crypto'
import { parseOptions } from '@shallot/core'
import { type ConnectionOptions, type JobsOptions, Queue } from 'bullmq'
import { z } from 'zod'
import { type RunJob, runJobSchema } from './run-job.js'

const queueOptionsSchema = z.strictObject({
  /** The queue's name; the workers of {@link agentWorker} take the same one. */
  name: z.string().min(1).max(200),
  /** Where BullMQ's Redis is: ioredis options (`{ host, port }`) or a client. */
  connection: z.custom<ConnectionOptions>(
    (v) => typeof v === 'object' && v !== null,
    'must be Redis connection options { host, port } or a client',
  ),
  /** BullMQ's key prefix. Default `bull`. */
  prefix: z.string().min(1).optional(),
  /** BullMQ job options for every run (`attempts`, `backoff`, `removeOnComplete`…); `jobId` and `delay` are the queue's. */
  jobOptions: z.custom<JobsOptions>((v) => typeof v === 'object' && v !== null, 'must be BullMQ job options').optional(),
})

export type AgentQueueOptions = z.input<typeof queueOptionsSchema>

/** A BullMQ queue of agent runs. */
export interface AgentQueue {
  readonly queue: Queue<RunJob>
  /** Adds a run; its id is the job id, so enqueuing a run id twice adds it once. Resolves to the run id. */
  enqueue(run: { input: string; runId?: string }): Promise<string>
  close(): Promise<void>
}

// A checkpoint that could not be saved is worth another attempt (a store that is down waits without one); BullMQ's backoff spaces them.
const DEFAULT_JOB_OPTIONS: JobsOptions = { attempts: 3, backoff: { type: 'exponential', delay: 1000 } }

/**
 * A queue of agent runs: each run is one BullMQ job whose id is the run id. Workers made with
 * {@link agentWorker} on the same name and Redis take them.
 *
 * @example
 * const runs = agentQueue({ name: 'agents', connection: { host: '127.0.0.1', port: 6379 } })
 * const runId = await runs.enqueue({ input: 'Refund order 42', runId: 'refund-42' })
 */
export function agentQueue(options: AgentQueueOptions): AgentQueue {
  const { name, connection, prefix, jobOptions } = parseOptions('agentQueue()', queueOptionsSchema, options)
  const queue = new Queue<RunJob>(name, { connection, ...(prefix === undefined ? {} : { prefix }) })
  const defaults = { ...DEFAULT_JOB_OPTIONS, ...jobOptions }
  return {
    queue,
    async enqueue(run) {
      const job = parseOptions('agentQueue().enqueue()', runJobSchema, { runId: run?.runId ?? `run_${randomUUID()}`, input: run?.input })
      await queue.add('run', job, { ...defaults, jobId: job.runId })
      return job.runId
    },
    close: () => queue.close(),
  }
}
