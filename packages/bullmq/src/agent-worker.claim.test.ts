// A job whose run is held by another driver (a stalled job's first worker still running it, seen
// through the checkpoint store's claim) must wait, not fail: the run is alive elsewhere. Against a
// private redis-server; the test waits on job events, never a sleep.

import { type CheckpointStore, createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool } from '@shallot/core'
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

/** Memory checkpoints with a claim, as a shared store has; `holdElsewhere` takes a run as another process would. */
function claimingCheckpoints() {
  const inner = memoryCheckpoints()
  const held = new Set<string>()
  const store: CheckpointStore & { holdElsewhere(runId: string): () => void } = {
    save: (snapshot) => inner.save(snapshot),
    load: (runId) => inner.load(runId),
    claim(runId) {
      if (held.has(runId)) return undefined
      held.add(runId)
      return () => void held.delete(runId)
    },
    holdElsewhere(runId) {
      held.add(runId)
      return () => void held.delete(runId)
    },
  }
  return store
}

describe('agentWorker and a run held elsewhere', () => {
  it('puts the job back for a lock duration instead of failing it, and runs it once the holder lets go', async () => {
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
    const writes: string[] = []
    const write = defineTool({
      name: 'write_note',
      description: 'Write a note',
      effect: 'write',
      input: z.object({}),
      execute: () => void writes.push('note'),
    })
    const checkpoints = claimingCheckpoints()
    const script = [{ toolCalls: [{ id: 'w', name: 'write_note', args: {} }] }, { text: 'done' }]
    const agent = createAgent({ model: scriptedModel(script), tools: [write], checkpoints, park: { afterMs: 100 } })
    const worker = agentWorker({ name: 'held', connection, agent, checkpoints, lockDuration: 500 })
    const runs = agentQueue({ name: 'held', connection, jobOptions: { attempts: 1 } })
    const events = new QueueEvents('held', { connection })
    open.push(worker, runs, events)
    await events.waitUntilReady()

    const release = checkpoints.holdElsewhere('order-1')
    const first = new Promise<string>((resolve) => {
      events.once('delayed', () => resolve('delayed'))
      events.once('failed', ({ failedReason }) => resolve(`failed: ${failedReason}`))
    })
    await runs.enqueue({ runId: 'order-1', input: 'write a note' })
    expect(await first).toBe('delayed')
    // Nothing ran while the run was held, and the job spent no attempt: it is waiting, not failed.
    expect(writes).toEqual([])
    expect(await runs.queue.getJobCounts('failed', 'delayed')).toEqual({ failed: 0, delayed: 1 })
    release()
    const job = await runs.queue.getJob('order-1')
    const result = await job?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed', output: 'done' })
    expect(writes).toEqual(['note'])
  })
})
