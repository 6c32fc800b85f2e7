// A run parked before its model call, resumed by another process: a worker in this process asks a model
// that answers 429 with a Retry-After past park.afterMs, so the run parks with no turn begun and BullMQ
// delays its job to wakeAt; then this worker goes away and a worker process on the built packages
// (test/model-park-worker.mjs) takes the delayed job at wakeAt from the same SQLite checkpoints file and
// asks the model. Real time is BullMQ's (delays are Redis timestamps): the wait is 600 ms, and the test
// waits on job events and the child's lines, never a fixed sleep.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createAgent, type RunSnapshot } from '@shallot/agent'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { sqliteCheckpoints } from '@shallot/store-sqlite'
import { QueueEvents } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RedisServer, startRedisServer } from '../../store-redis/src/test-support/redis-server.js'
import { agentQueue, agentWorker } from './index.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workerPath = fileURLToPath(new URL('../test/model-park-worker.mjs', import.meta.url))
const WAIT_MS = 600
const PARK_AFTER_MS = 100

let redis: RedisServer
const dir = mkdtempSync(join(tmpdir(), 'shallot-model-park-'))
const open: Array<{ close(): Promise<void> | void }> = []
let child: ChildProcessWithoutNullStreams | undefined

beforeAll(async () => {
  redis = await startRedisServer()
}, 60_000)
afterAll(async () => {
  child?.kill('SIGKILL')
  for (const thing of open.reverse()) await thing.close()
  await redis?.close()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

/** The worker process: resolves once it runs; `lines` fills with what it prints. */
function startChild(config: object): Promise<{ lines: Array<Record<string, unknown>>; stderr: () => string }> {
  const proc = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  child = proc
  const lines: Array<Record<string, unknown>> = []
  let stderr = ''
  let buffer = ''
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    proc.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        if (line === 'ready') resolve({ lines, stderr: () => stderr })
        else if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>)
      }
    })
    proc.once('close', (code) => reject(new Error(`worker exited before ready (${String(code)}): ${stderr}`)))
  })
}

describe('a run parked before its model call, on BullMQ', () => {
  it('becomes a delayed job at wakeAt, and a worker in another process resumes it into the model call', async () => {
    const path = join(dir, 'runs.db')
    const checkpoints = sqliteCheckpoints({ path })
    open.push(checkpoints)
    let asked = 0
    // The provider pushes back for everyone here: a 429 whose Retry-After is past park.afterMs, as a classifier leaves it.
    const pushedBack: ModelAdapter = {
      name: 'gpt',
      async generate() {
        asked++
        throw new ToolError('rate_limited', 'rate limited by the provider', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          retryAfterMs: WAIT_MS,
          details: { status: 429 },
        })
      },
    }
    const agent = createAgent({ model: pushedBack, tools: [], checkpoints, park: { afterMs: PARK_AFTER_MS } })
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
    const here = agentWorker({ name: 'model-park', connection, agent, checkpoints })
    const runs = agentQueue({ name: 'model-park', connection })
    const events = new QueueEvents('model-park', { connection })
    open.push(runs, events)
    await events.waitUntilReady()
    const delayed = new Promise<number>((resolve) => events.once('delayed', ({ delay }) => resolve(Number(delay))))
    const runId = await runs.enqueue({ runId: 'pushed-1', input: 'Summarise the day' })
    const delay = await delayed
    // The worker here is gone before the job wakes: only the other process can take it.
    await here.close()
    expect(asked).toBe(1)
    const saved = (await checkpoints.load(runId)) as RunSnapshot
    expect(saved).toMatchObject({ status: 'parked', turn: 0, parked: { reason: { code: 'rate_limited', model: 'gpt', waitMs: WAIT_MS } } })
    expect(saved.pendingTurn).toBeUndefined()
    expect(delay).toBe(saved.parked?.wakeAt)

    const other = await startChild({ queue: 'model-park', redisPort: redis.port, checkpoints: path, parkAfterMs: PARK_AFTER_MS })
    const job = await runs.queue.getJob(runId)
    const result = await job?.waitUntilFinished(events, 20_000)
    const pid = child?.pid
    expect(result).toEqual({ status: 'completed', runId, output: `answered in ${pid}`, turns: 1, steps: 2 })
    const requests = other.lines.filter((l) => l.model === 'asked')
    // One request, after wakeAt, reading the task alone: the failed call left nothing in the transcript.
    expect(requests).toHaveLength(1)
    expect(requests[0]?.at as number).toBeGreaterThanOrEqual(delay)
    expect(requests[0]?.messages).toBe(1)
    expect(other.lines.filter((l) => l.outcome !== undefined).map((l) => l.outcome)).toEqual(['completed'])
    expect(await checkpoints.load(runId)).toMatchObject({ status: 'completed', output: `answered in ${pid}` })
    expect(other.stderr()).toBe('')
  }, 60_000)
})
