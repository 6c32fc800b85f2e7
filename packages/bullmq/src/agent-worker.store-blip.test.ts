// A store blip while a run parks: a private PostgreSQL (checkpoints and idempotency records) is
// stopped at the moment the run must save its parked checkpoint, and started again when the worker
// reports that the store is unavailable. The job waits without spending an attempt, resumes from the
// last good checkpoint, parks, wakes and completes; the write ran once. Real time is
// BullMQ's and the servers' (nothing here can share a fake clock): the test waits on job events.

import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, silentLogger, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { QueueEvents } from 'bullmq'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { postgresStores } from '../../store-postgres/src/index.js'
import { type PostgresServer, startPostgresServer } from '../../store-postgres/src/test-support/postgres-server.js'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { agentQueue, agentWorker } from './index.js'

let redis: RedisServer
let postgres: PostgresServer
let pool: pg.Pool
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  ;[redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()])
  pool = new pg.Pool({ connectionString: postgres.url, max: 4, connectionTimeoutMillis: 5000 })
  // Idle connections die with the server; the pool drops them.
  pool.on('error', () => {})
  await postgresStores({ pool, tablePrefix: 'blip_' }).migrate()
}, 120_000)

afterAll(async () => {
  for (const thing of open.reverse()) await thing.close()
  await pool?.end()
  await Promise.all([redis?.close(), postgres?.close()])
}, 60_000)

/** A model without memory of its own: asked again with the same messages, it asks for the same calls. */
const model: ModelAdapter = {
  async generate({ messages }) {
    const results = messages.filter((m) => m.role === 'tool').map((m) => (m as { content: string }).content)
    if (results.length > 0) return { text: results.join(' | ') }
    return {
      toolCalls: [
        { id: 'charge', name: 'charge', args: { cents: 500 } },
        { id: 'quote', name: 'quote', args: {} },
      ],
    }
  },
}

describe('agentWorker when the checkpoint store restarts as a run parks', () => {
  it('the job waits without spending an attempt; the run resumes from its last good checkpoint, parks, wakes and completes, and the write ran once', async () => {
    const effects = { charges: 0, quotes: 0 }
    const charge = defineTool({
      name: 'charge',
      description: 'Charge the card',
      input: z.object({ cents: z.number() }),
      effect: 'write',
      execute: ({ cents }) => {
        effects.charges++
        return `charged ${cents}`
      },
    })
    const quote = defineTool({
      name: 'quote',
      description: 'Quote a rate',
      input: z.object({}),
      effect: 'read',
      execute: async () => {
        const n = ++effects.quotes
        // The first answer is a long 429, and the store goes down just before the run saves its park.
        if (n === 1) await postgres.stop('fast')
        if (n <= 2) throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: 400 })
        return '1.08'
      },
    })
    // The claim the failed save could not give back lapses in 2 s, not the default 30.
    const stores = postgresStores({ pool, tablePrefix: 'blip_', timeoutMs: 5000, claimLeaseMs: 2000 })
    const agent = createAgent({
      model,
      tools: [charge, quote],
      middleware: [idempotency({ store: stores.idempotency })],
      checkpoints: stores.checkpoints,
      // One call at a time: the charge's record is written before the quote takes the server down.
      limits: { maxParallelToolCalls: 1 },
      park: { afterMs: 100 },
    })
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
    const waits: string[] = []
    const logger = {
      ...silentLogger,
      warn(fields: object, message?: string) {
        if (message?.includes('store the run needs is unavailable') !== true) return
        waits.push(String((fields as { err?: Error }).err?.message))
        // The server comes back while the job waits.
        if (waits.length === 1) void postgres.start()
      },
    }
    // A lock of 1 s: a job whose store is down waits a second before it tries again.
    const worker = agentWorker({ name: 'blip', connection, agent, checkpoints: stores.checkpoints, logger, lockDuration: 1000 })
    const failures: string[] = []
    worker.worker.on('failed', (_job, err) => failures.push(err.message))
    const runs = agentQueue({ name: 'blip', connection })
    const events = new QueueEvents('blip', { connection })
    open.push(worker, runs, events)
    await events.waitUntilReady()

    const runId = await runs.enqueue({ runId: 'blip-1', input: 'charge and quote' })
    const result = await (await runs.queue.getJob(runId))?.waitUntilFinished(events, 60_000)

    expect(result).toMatchObject({ status: 'completed', runId, output: 'charged 500 | 1.08', turns: 2 })
    expect(waits[0]).toMatch(/failed to save the parked checkpoint of run "blip-1"/)
    expect(failures).toEqual([])
    expect(effects).toEqual({ charges: 1, quotes: 3 })
    expect(await stores.checkpoints.load(runId)).toMatchObject({ status: 'completed', output: 'charged 500 | 1.08' })
  }, 90_000)
})
