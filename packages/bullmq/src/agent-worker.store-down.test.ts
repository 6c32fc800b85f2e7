// A store that is down is the fleet's trouble, not the run's: a job whose checkpoint store answers
// `store_unavailable` (as the PostgreSQL and Redis stores do while their server restarts) waits and
// tries again without spending the attempts BullMQ grants it, so a database restart longer than three
// attempts' backoff loses no run. A checkpoint that cannot be saved for any other reason still spends
// them. Against a private redis-server; the test waits on job events, never a sleep.

import { type CheckpointStore, createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { QueueEvents } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { agentQueue, agentWorker } from './index.js'

let redis: RedisServer
const open: Array<{ close(): Promise<void> }> = []
beforeAll(async () => {
  redis = await startRedisServer()
})
afterAll(async () => {
  for (const thing of open.reverse()) await thing.close()
  await redis?.close()
})

const down = () =>
  new ToolError('store_unavailable', 'The PostgreSQL store failed checkpoints.load: PostgreSQL refused or lost the query.', {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
  })

/** Memory checkpoints whose first `outages` loads fail as a store whose server is restarting fails. */
function restartingCheckpoints(outages: number): CheckpointStore & { loads: number } {
  const inner = memoryCheckpoints()
  const store = {
    loads: 0,
    save: inner.save.bind(inner),
    load(runId: string) {
      if (++store.loads <= outages) throw down()
      return inner.load(runId)
    },
  }
  return store
}

function setUp(name: string, checkpoints: CheckpointStore) {
  const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
  const writes: string[] = []
  const write = defineTool({
    name: 'write_note',
    description: 'Write a note',
    effect: 'write',
    input: z.object({}),
    execute: () => void writes.push('note'),
  })
  const script = [{ toolCalls: [{ id: 'w', name: 'write_note', args: {} }] }, { text: 'done' }]
  const agent = createAgent({ model: scriptedModel(script), tools: [write], checkpoints, park: { afterMs: 100 } })
  const worker = agentWorker({ name, connection, agent, checkpoints, lockDuration: 300 })
  // agentQueue's default job options: 3 attempts, exponential backoff from 1 s.
  const runs = agentQueue({ name, connection })
  const events = new QueueEvents(name, { connection })
  open.push(worker, runs, events)
  return { runs, events, writes }
}

describe('agentWorker when its store is down', () => {
  it('waits out an outage longer than three attempts, spending none of them, then runs the job once', async () => {
    const checkpoints = restartingCheckpoints(5)
    const { runs, events, writes } = setUp('store-down', checkpoints)
    const failures: string[] = []
    events.on('failed', ({ failedReason }) => failures.push(failedReason))
    await events.waitUntilReady()

    await runs.enqueue({ runId: 'order-1', input: 'write a note' })
    const job = await runs.queue.getJob('order-1')
    const result = await job?.waitUntilFinished(events, 30_000)

    expect(result).toMatchObject({ status: 'completed', output: 'done' })
    expect(checkpoints.loads).toBeGreaterThan(5)
    expect(failures).toEqual([])
    // The one attempt BullMQ counts is the one that completed.
    expect((await runs.queue.getJob('order-1'))?.attemptsMade).toBe(1)
    expect(writes).toEqual(['note'])
  }, 40_000)

  it('still spends an attempt on a checkpoint that cannot be saved for another reason', async () => {
    const inner = memoryCheckpoints()
    const broken: CheckpointStore = {
      load: (runId) => inner.load(runId),
      save() {
        throw new RangeError('the snapshot does not fit in the column')
      },
    }
    const { runs, events } = setUp('store-broken', broken)
    await events.waitUntilReady()
    await runs.queue.add('run', { runId: 'order-2', input: 'write a note' }, { jobId: 'order-2', attempts: 1 })
    const job = await runs.queue.getJob('order-2')
    await expect(job?.waitUntilFinished(events, 30_000)).rejects.toThrow(/failed to save .* of run "order-2": the snapshot does not fit/)
  }, 40_000)
})
