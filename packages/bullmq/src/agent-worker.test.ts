// agentQueue and agentWorker in one process against a private redis-server. Real time is BullMQ's
// (delays are Redis timestamps): parks are 400 ms, and the tests wait on job events, never a sleep.

import { type CheckpointStore, createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, OptionsError, ToolError } from '@shallot/core'
import { idempotency, memoryIdempotencyStore } from '@shallot/idempotency'
import { scriptedModel } from '@shallot/testing'
import { QueueEvents } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { type AgentWorker, agentQueue, agentWorker } from './index.js'

let redis: RedisServer
let connection: { host: string; port: number; maxRetriesPerRequest: null }
let queues = 0
const open: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  redis = await startRedisServer()
  connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
})
afterAll(async () => {
  for (const thing of open.reverse()) await thing.close()
  await redis?.close()
})

const WAIT_MS = 400

/** A world of one write (`charge`) and one read (`quote`) that answers 429 with a 400 ms Retry-After the first time. */
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
        throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: WAIT_MS })
      }
      return '1.08'
    },
  })
  const script = [
    {
      toolCalls: [
        { id: 'c', name: 'charge', args: {} },
        { id: 'q', name: 'quote', args: {} },
      ],
    },
    { text: 'done' },
  ]
  return { effects, tools: [charge, quote], script }
}

function setup(options: { checkpoints?: CheckpointStore; concurrency?: number; asyncListener?: boolean; lockDuration?: number } = {}) {
  const name = `q${++queues}`
  const w = world()
  const checkpoints = options.checkpoints ?? memoryCheckpoints()
  const agent = createAgent({ model: scriptedModel(w.script), tools: w.tools, checkpoints, park: { afterMs: 100 } })
  const outcomes: string[] = []
  const worker: AgentWorker = agentWorker({
    name,
    connection,
    agent,
    checkpoints,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.lockDuration === undefined ? {} : { lockDuration: options.lockDuration }),
    onOutcome: options.asyncListener
      ? async (outcome) => {
          outcomes.push(outcome.status)
          // An async listener (writing the outcome to a database) rejects instead of throwing.
          if (outcome.status === 'parked') throw new Error('a listener that rejects must not fail the job nor the process')
        }
      : (outcome) => {
          outcomes.push(outcome.status)
          if (outcome.status === 'parked') throw new Error('a listener that throws must not fail the job')
        },
  })
  const runs = agentQueue({ name, connection })
  const events = new QueueEvents(name, { connection })
  open.push(worker, runs, events)
  return { ...w, name, checkpoints, worker, runs, events, outcomes }
}

describe('agentWorker', () => {
  it('runs a job to completion; a run that parks waits as a delayed job at wakeAt, then completes', async () => {
    const { runs, events, effects, outcomes, checkpoints } = setup()
    await events.waitUntilReady()
    const runId = await runs.enqueue({ runId: 'order-1', input: 'charge and quote' })
    const delayed = new Promise<{ delay: number }>((resolve) => events.once('delayed', ({ delay }) => resolve({ delay: Number(delay) })))
    const { delay } = await delayed
    const saved = await checkpoints.load(runId)
    expect(saved).toMatchObject({ status: 'parked' })
    // BullMQ's delayed timestamp is the run's wakeAt.
    expect(delay).toBe(saved?.parked?.wakeAt)
    expect(await runs.queue.getJobCounts('active', 'delayed')).toEqual({ active: 0, delayed: 1 })
    const job = await runs.queue.getJob(runId)
    const result = await job?.waitUntilFinished(events)
    expect(result).toEqual({ status: 'completed', runId, output: 'done', turns: 2, steps: 5 })
    expect(effects).toEqual({ charges: 1, quotes: 2 })
    expect(outcomes).toEqual(['parked', 'completed'])
  })

  it('logs an async onOutcome listener that rejects, and the run still parks and completes', async () => {
    const { runs, events, effects, outcomes } = setup({ asyncListener: true })
    await events.waitUntilReady()
    const runId = await runs.enqueue({ runId: 'order-async', input: 'charge and quote' })
    const result = await (await runs.queue.getJob(runId))?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed', runId })
    expect(effects).toEqual({ charges: 1, quotes: 2 })
    expect(outcomes).toEqual(['parked', 'completed'])
  })

  it('puts a job woken early back to sleep without running anything', async () => {
    const { runs, events, effects, outcomes } = setup()
    await events.waitUntilReady()
    let delays = 0
    const twice = new Promise<void>((resolve) =>
      events.on('delayed', () => {
        if (++delays === 2) resolve()
      }),
    )
    const runId = await runs.enqueue({ runId: 'order-2', input: 'x' })
    await new Promise<void>((resolve) => events.once('delayed', () => resolve()))
    await (await runs.queue.getJob(runId))?.promote()
    await twice
    expect(effects).toEqual({ charges: 1, quotes: 1 })
    const result = await (await runs.queue.getJob(runId))?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed' })
    expect(outcomes).toEqual(['parked', 'parked', 'completed'])
    expect(effects).toEqual({ charges: 1, quotes: 2 })
  })

  it('fails a run whose parked checkpoint is corrupt for good: no retry, the reason names the run', async () => {
    const checkpoints = memoryCheckpoints()
    await checkpoints.save({
      version: 1,
      runId: 'bad-1',
      input: 'x',
      status: 'parked',
      turn: 0,
      stepsUsed: 0,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
      pendingTurn: { turn: 1, response: { toolCalls: [] }, results: {}, pending: [] },
      parked: { wakeAt: null as never, parkedAt: Date.now(), reason: { code: 'rate_limited', tool: 'quote', callId: 'q', waitMs: 1 } },
    })
    const { runs, events, effects } = setup({ checkpoints })
    await events.waitUntilReady()
    await runs.enqueue({ runId: 'bad-1', input: 'x' })
    const job = await runs.queue.getJob('bad-1')
    await expect(job?.waitUntilFinished(events)).rejects.toThrow(/run "bad-1": .*corrupt park record \(wakeAt is null/)
    const failed = await runs.queue.getJob('bad-1')
    expect(failed?.attemptsMade).toBe(1)
    expect(effects).toEqual({ charges: 0, quotes: 0 })
  })

  it('puts a job whose checkpoint store was down back for a lock duration, spending no attempt', async () => {
    const inner = memoryCheckpoints()
    let downFor = 1
    const flaky: CheckpointStore = {
      save: (s) => inner.save(s),
      load: (id) => {
        if (downFor-- > 0) throw new ToolError('store_unavailable', 'the store is down', { category: 'transient' })
        return inner.load(id)
      },
    }
    const { runs, events } = setup({ checkpoints: flaky, lockDuration: 300 })
    await events.waitUntilReady()
    await runs.queue.add('run', { runId: 'flaky-1', input: 'x' }, { jobId: 'flaky-1', attempts: 1 })
    const result = await (await runs.queue.getJob('flaky-1'))?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed' })
    // One attempt, the one that completed: the wait for the store spent none.
    expect((await runs.queue.getJob('flaky-1'))?.attemptsMade).toBe(1)
  })

  it('puts back a job whose parked checkpoint could not be saved; the run completes and its write ran once', async () => {
    const inner = memoryCheckpoints()
    let parkFailures = 1
    const flaky: CheckpointStore = {
      name: 'flaky',
      save: (s) => {
        if (s.status === 'parked' && parkFailures-- > 0)
          throw new ToolError('store_unavailable', 'the store restarted', { category: 'transient' })
        return inner.save(s)
      },
      load: (id) => inner.load(id),
    }
    const w = world()
    // Asked again after a lost turn, the model asks for the same calls: it answers from the transcript.
    const model = {
      generate: async ({ messages }: { messages: readonly { role: string }[] }) =>
        messages.some((m) => m.role === 'tool') ? { text: 'done' } : (w.script[0] as { toolCalls: [] }),
    }
    const agent = createAgent({
      model,
      tools: w.tools,
      middleware: [idempotency({ store: memoryIdempotencyStore() })],
      checkpoints: flaky,
      park: { afterMs: 100 },
    })
    const name = `q${++queues}`
    const worker = agentWorker({ name, connection, agent, checkpoints: flaky, lockDuration: 300 })
    const runs = agentQueue({ name, connection })
    const events = new QueueEvents(name, { connection })
    open.push(worker, runs, events)
    await events.waitUntilReady()
    await runs.queue.add('run', { runId: 'park-blip', input: 'x' }, { jobId: 'park-blip', attempts: 1 })
    const result = await (await runs.queue.getJob('park-blip'))?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed', output: 'done' })
    // One attempt: the job that met the store down while parking waited, resumed from the turn before and completed.
    expect((await runs.queue.getJob('park-blip'))?.attemptsMade).toBe(1)
    expect(w.effects.charges).toBe(1)
    expect(await inner.load('park-blip')).toMatchObject({ status: 'completed' })
  })

  it('fails a job whose sealed checkpoint was changed in the store for good: the planted call never runs', async () => {
    const checkpoints = memoryCheckpoints()
    const w = world()
    const key = 'a-worker-fleet-secret-of-32-bytes-or-more'
    const agent = createAgent({ model: scriptedModel(w.script), tools: w.tools, checkpoints, park: { afterMs: 100 }, checkpointKey: key })
    const first = await agent.run({ input: 'x', runId: 'sealed-1' })
    expect(first).toMatchObject({ status: 'parked' })
    const saved = JSON.parse(JSON.stringify(await checkpoints.load('sealed-1')))
    saved.pendingTurn.response.toolCalls[1] = { id: 'q', name: 'charge', args: {} }
    await checkpoints.save(saved)
    const name = `q${++queues}`
    const worker = agentWorker({ name, connection, agent, checkpoints })
    const runs = agentQueue({ name, connection })
    const events = new QueueEvents(name, { connection })
    open.push(worker, runs, events)
    await events.waitUntilReady()
    await runs.enqueue({ runId: 'sealed-1', input: 'x' })
    const job = await runs.queue.getJob('sealed-1')
    await expect(job?.waitUntilFinished(events)).rejects.toThrow(/run "sealed-1": .*its integrity digest does not match/)
    expect((await runs.queue.getJob('sealed-1'))?.attemptsMade).toBe(1)
    expect(w.effects.charges).toBe(1)
  })

  it('hands concurrency and rate limits to BullMQ', () => {
    const { worker, checkpoints, tools, script } = setup({ concurrency: 3 })
    expect(worker.worker.opts.concurrency).toBe(3)
    const agent = createAgent({ model: scriptedModel(script), tools, checkpoints, park: { afterMs: 100 } })
    const limited = agentWorker({ name: 'limited', connection, agent, checkpoints, autorun: false, limiter: { max: 10, duration: 1000 } })
    open.push(limited)
    expect(limited.worker.opts.limiter).toEqual({ max: 10, duration: 1000 })
  })

  it.each([
    [{ checkpoints: undefined }, /agentWorker\(\): option checkpoints: must be the agent's checkpoint store/],
    [{ concurrency: 0 }, /option concurrency/],
    [{ agent: {} }, /option agent: must be an agent from createAgent/],
    [{ limiter: { max: 'ten' } }, /option limiter: must be \{ max, duration \}/],
    [{ lockDuration: Number.NaN }, /option lockDuration/],
    [{ lockduration: 1000 }, /lockduration/],
  ])('refuses bad options %j with an OptionsError naming the option', (bad, message) => {
    const checkpoints = memoryCheckpoints()
    const w = world()
    const agent = createAgent({ model: scriptedModel(w.script), tools: w.tools, checkpoints, park: { afterMs: 100 } })
    const make = () => agentWorker({ name: 'never', connection, agent, checkpoints, autorun: false, ...bad } as never)
    expect(make).toThrow(OptionsError)
    expect(make).toThrow(message)
  })
})

describe('agentQueue', () => {
  it.each([
    ['12345', /must not be all digits/],
    ['a:b', /must be 1–128 letters, digits/],
    ['', /must be 1–128 letters/],
  ])('refuses the run id %j before it reaches Redis', async (runId, message) => {
    const { runs } = setup()
    await expect(runs.enqueue({ runId, input: 'x' })).rejects.toThrow(message)
  })

  it('adds a run id once, however often it is enqueued', async () => {
    const { runs, events } = setup()
    await events.waitUntilReady()
    await runs.enqueue({ runId: 'once', input: 'x' })
    await runs.enqueue({ runId: 'once', input: 'x' })
    const result = await (await runs.queue.getJob('once'))?.waitUntilFinished(events)
    expect(result).toMatchObject({ status: 'completed' })
    const counts = await runs.queue.getJobCounts('completed', 'waiting', 'delayed')
    expect(counts).toEqual({ completed: 1, waiting: 0, delayed: 0 })
  })
})
