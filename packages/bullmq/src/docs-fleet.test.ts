// docs/fleet.md: every code sample is a file of test-support/fleet-doc verbatim, and each one runs here
// against a real SQLite file, a private redis-server and a private PostgreSQL.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRun, defineTool, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type PostgresServer, startPostgresServer } from '../../store-postgres/src/test-support/postgres-server.js'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { startWorker } from './test-support/fleet-doc/bullmq.js'
import { durableAgent } from './test-support/fleet-doc/durable-postgres.js'
import { laptopAgent } from './test-support/fleet-doc/one-machine.js'
import { fleetStack } from './test-support/fleet-doc/shared-redis.js'

const read = (url: URL) => readFileSync(url, 'utf8')
const doc = read(new URL('../../../docs/fleet.md', import.meta.url))
const sample = (name: string) =>
  read(new URL(`./test-support/fleet-doc/${name}.ts`, import.meta.url)).replace("from '../../index.js'", "from '@shallot/bullmq'")

let redis: RedisServer
let postgres: PostgresServer
const dir = mkdtempSync(join(tmpdir(), 'shallot-fleet-doc-'))

beforeAll(async () => {
  ;[redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()])
}, 60_000)
afterAll(async () => {
  vi.useRealTimers()
  await Promise.all([redis?.close(), postgres?.close()])
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

/** A write that counts, and a read that answers 429 with a 60 s Retry-After the first time. */
function world() {
  const effects = { charges: 0, quotes: 0 }
  const charge = defineTool({
    name: 'charge',
    description: 'Charge',
    input: z.object({}),
    effect: 'write',
    execute: () => {
      effects.charges++
      return 'charged'
    },
  })
  const quote = defineTool({
    name: 'quote',
    description: 'Quote',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      if (effects.quotes++ === 0) {
        throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: 60_000 })
      }
      return '1.08'
    },
  })
  const turn = {
    toolCalls: [
      { id: 'c', name: 'charge', args: {} },
      { id: 'q', name: 'quote', args: {} },
    ],
  }
  return { effects, tools: [charge, quote], script: [turn, { text: 'done' }] }
}

describe('docs/fleet.md', () => {
  it.each(['one-machine', 'shared-redis', 'durable-postgres', 'bullmq'])('shows the %s sample verbatim', (name) => {
    expect(sample(name).length).toBeGreaterThan(100)
    expect(doc).toContain(`\`\`\`ts\n${sample(name)}\`\`\``)
  })

  it.each(['durable-postgres', 'bullmq'])('the package README shows the %s sample verbatim', (name) => {
    expect(read(new URL('../README.md', import.meta.url))).toContain(`\`\`\`ts\n${sample(name)}\`\`\``)
  })

  it('one machine: a run parks in the SQLite file and resumes after wakeAt without charging again', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 })
    const { effects, tools, script } = world()
    const path = join(dir, 'laptop.db')
    const parked = await laptopAgent(scriptedModel(script), tools, path).run({ input: 'x', runId: 'laptop-1' })
    expect(parked).toMatchObject({ status: 'parked', wakeAt: 1_800_000_060_000 })
    vi.setSystemTime(1_800_000_060_000)
    const done = await laptopAgent(scriptedModel(script.slice(1)), tools, path).resume('laptop-1')
    expect(done).toMatchObject({ status: 'completed', output: 'done' })
    expect(effects).toEqual({ charges: 1, quotes: 2 })
    vi.useRealTimers()
  })

  it('shared Redis: two workers’ stacks charge once between them', async () => {
    const { effects, tools } = world()
    const a = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    const b = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    try {
      const call = { id: 'c', name: 'charge', args: {} }
      const run = createRun({ id: 'shared-1' })
      expect(await fleetStack(a, tools).dispatch(call, { run })).toMatchObject({ ok: true, replayed: false })
      expect(await fleetStack(b, tools).dispatch(call, { run })).toMatchObject({ ok: true, replayed: true })
      expect(effects.charges).toBe(1)
    } finally {
      a.disconnect()
      b.disconnect()
    }
  })

  it('PostgreSQL: a parked run is in the database and another worker resumes it', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_800_000_000_000 })
    const { effects, tools, script } = world()
    const first = await durableAgent(postgres.url, scriptedModel(script), tools)
    expect(await first.agent.run({ input: 'x', runId: 'pg-1' })).toMatchObject({ status: 'parked' })
    expect(await first.checkpoints.load('pg-1')).toMatchObject({ status: 'parked', parked: { wakeAt: 1_800_000_060_000 } })
    vi.setSystemTime(1_800_000_060_000)
    const second = await durableAgent(postgres.url, scriptedModel(script.slice(1)), tools)
    expect(await second.agent.resume('pg-1')).toMatchObject({ status: 'completed', output: 'done' })
    expect(effects).toEqual({ charges: 1, quotes: 2 })
    await first.close()
    await second.close()
    vi.useRealTimers()
  })

  it('BullMQ: an enqueued run is taken by the worker and completes', async () => {
    const { effects, tools } = world()
    const model = scriptedModel([{ toolCalls: [{ id: 'c', name: 'charge', args: {} }] }, { text: 'refunded' }])
    const { agent, checkpoints, close } = await durableAgent(postgres.url, model, tools)
    const { worker, runs } = startWorker(agent, checkpoints, { host: '127.0.0.1', port: redis.port })
    const events = new QueueEvents('billing', { connection: { host: '127.0.0.1', port: redis.port } })
    try {
      await events.waitUntilReady()
      await runs.enqueue({ runId: 'refund-42', input: 'Refund order 42' })
      const result = await (await runs.queue.getJob('refund-42'))?.waitUntilFinished(events)
      expect(result).toMatchObject({ status: 'completed', runId: 'refund-42', output: 'refunded' })
      expect(effects.charges).toBe(1)
    } finally {
      await events.close()
      await runs.close()
      await worker.close()
      await close()
    }
  })
})
