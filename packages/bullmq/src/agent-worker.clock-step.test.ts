// A host whose wall clock steps back (an NTP correction, a VM restored) while a run is in flight: the
// job's lock must go on being renewed, or another worker's stalled-job check hands the run on while
// it runs here. BullMQ schedules its renewals by the wall clock (Date.now); the lock must not depend
// on it. Against a private redis-server; the tool waits on the lock's renewals (or the stall) in Redis.

import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { agentQueue, agentWorker } from './index.js'

let redis: RedisServer
const open: Array<{ close(): Promise<void> }> = []
beforeAll(async () => {
  redis = await startRedisServer()
})
afterAll(async () => {
  vi.restoreAllMocks()
  for (const thing of open.reverse()) await thing.close()
  await redis?.close()
})

describe('agentWorker on a host whose clock steps back', () => {
  it('keeps renewing the lock of a running job, so it is never handed on as stalled', async () => {
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
    const events = new QueueEvents('stepped', { connection })
    const stalls: string[] = []
    events.on('stalled', ({ jobId }) => stalls.push(jobId))
    const probe = new Redis(connection)
    open.push({ close: async () => void probe.disconnect() })
    const realNow = Date.now.bind(Date)
    let runs = 0
    const work = defineTool({
      name: 'long_job',
      description: 'Works through two lock renewals after the clock steps back 3 s',
      effect: 'read',
      input: z.object({}),
      execute: async () => {
        runs++
        vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 3000)
        // Done once the lock was renewed twice after the step, or once the job was handed on.
        let last = await probe.pttl('bull:stepped:step-1:lock')
        for (let renewals = 0; renewals < 2 && stalls.length === 0; ) {
          await new Promise((resolve) => setTimeout(resolve, 25))
          const ttl = await probe.pttl('bull:stepped:step-1:lock')
          if (ttl > last + 100) renewals++
          last = ttl
        }
        return 'worked'
      },
    })
    const checkpoints = memoryCheckpoints()
    const script = [{ toolCalls: [{ id: 'w', name: 'long_job', args: {} }] }, { text: 'done' }]
    const agent = createAgent({ model: scriptedModel(script), tools: [work], checkpoints, park: { afterMs: 1000 } })
    const worker = agentWorker({ name: 'stepped', connection, agent, checkpoints, lockDuration: 1000, stalledInterval: 250 })
    const queue = agentQueue({ name: 'stepped', connection })
    open.push(worker, queue, events)
    await events.waitUntilReady()

    await queue.enqueue({ runId: 'step-1', input: 'work' })
    const result = await (await queue.queue.getJob('step-1'))?.waitUntilFinished(events, 20_000)
    vi.restoreAllMocks()

    expect(stalls).toEqual([])
    expect(result).toMatchObject({ status: 'completed', output: 'done' })
    expect(runs).toBe(1)
  }, 30_000)
})
