// The rate limit's must-shows for a fleet: three real worker processes (test/rate-limit-worker.mjs, the BUILT
// packages, which vitest's global setup builds first: .ci/vitest-build.ts) sharing one limit in one real Redis. Real
// time is unavoidable here: separate processes cannot share a fake clock. The limit is 100 calls a second and a call
// may wait 3 s, so the test takes about 4 s.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageDir } from './test-support/fleet-workers.js'
import { type RedisServer, startRedisServer } from './test-support/redis-server.js'

interface Result {
  ok: boolean
  code?: string
  retryAfterMs?: number
  waitMs: number
  startedAt: number
  ranAt?: number
}

const LIMIT = 100
const PER_MS = 1000
const MAX_WAIT_MS = 3000

class Worker {
  private buffer = ''
  private readonly waiting = new Map<string, (results: Result[]) => void>()
  private commands = 0
  stderr = ''
  readonly ready: Promise<void>
  readonly exited: Promise<unknown>

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    let ready = () => {}
    this.ready = new Promise((resolve) => {
      ready = resolve
    })
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString()
    })
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString()
      for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 1)
        if (line === 'ready') ready()
        if (!line.startsWith('{')) continue
        const reply = JSON.parse(line) as { id: string; results: Result[] }
        this.waiting.get(reply.id)?.(reply.results)
        this.waiting.delete(reply.id)
      }
    })
    this.exited = new Promise((resolve) => child.once('close', resolve))
  }

  send(calls: number, closed = false): Promise<Result[]> {
    const id = `cmd${++this.commands}`
    const answered = new Promise<Result[]>((resolve) => this.waiting.set(id, resolve))
    this.child.stdin.write(`${JSON.stringify({ id, calls, closed })}\n`)
    return answered
  }
}

let redis: RedisServer
let fleet: Worker[] = []

beforeAll(async () => {
  redis = await startRedisServer()
  const config = { port: redis.port, prefix: 'fleet-rl', timeoutMs: 1000, limit: LIMIT, perMs: PER_MS, burst: 1, maxWaitMs: MAX_WAIT_MS }
  fleet = [0, 1, 2].map(
    () =>
      new Worker(spawn(process.execPath, [join(packageDir, 'test', 'rate-limit-worker.mjs'), JSON.stringify(config)], { cwd: packageDir })),
  )
  await Promise.all(fleet.map((w) => Promise.race([w.ready, w.exited.then(() => Promise.reject(new Error(w.stderr)))])))
  // A warm-up, so the measured calls do not pay for compiling the workers' code; then its reservations run out.
  await Promise.all(fleet.map((w) => w.send(20)))
  await new Promise((resolve) => setTimeout(resolve, (60 * PER_MS) / LIMIT + 200))
}, 120_000)

afterAll(async () => {
  for (const w of fleet) w.child.stdin.end()
  await Promise.all(fleet.map((w) => w.exited))
  await redis?.close()
})

/** The most calls that ran in any window of `ms`. */
function busiestWindow(times: readonly number[], ms: number): number {
  let most = 0
  for (let first = 0, last = 0; last < times.length; last++) {
    while ((times[last] as number) - (times[first] as number) >= ms) first++
    most = Math.max(most, last - first + 1)
  }
  return most
}

describe('one rate limit for three worker processes on one Redis', () => {
  it('admits 1,000 calls made at once at the limit (within 5 %), and no call waits past its bound', async () => {
    const replies = await Promise.all([334, 333, 333].map((calls, i) => fleet[i]?.send(calls) ?? []))
    const results = replies.flat()
    expect(results).toHaveLength(1000)
    const admitted = results.filter((r) => r.ok)
    const refused = results.filter((r) => !r.ok)
    expect(refused.every((r) => r.code === 'rate_limited' && (r.retryAfterMs ?? 0) > MAX_WAIT_MS)).toBe(true)
    // Every worker took a share of one limit: the fleet's, not each process's (three would admit three times as many).
    for (const reply of replies) expect(reply.filter((r) => r.ok).length).toBeGreaterThan(10)

    // Admissions in wall-clock time. Over the whole run, and from the moment every worker was running calls: until
    // then a worker's event loop is busy sending its 333 calls (the machine is shared), and the calls Redis gave the
    // first places to run late, bunched, when it is free. The limiter's own pace is the second figure.
    const times = admitted.map((r) => r.ranAt as number).sort((a, b) => a - b)
    const rateOf = (ts: readonly number[]) => ((ts.length - 1) / ((ts.at(-1) as number) - (ts[0] as number))) * PER_MS
    const allRunning = Math.max(...replies.map((reply) => Math.min(...reply.filter((r) => r.ok).map((r) => r.ranAt as number))))
    const steady = times.filter((t) => t >= allRunning)
    const starts = results.map((r) => r.startedAt).sort((a, b) => a - b)
    const arrivalMs = (starts.at(-1) as number) - (starts[0] as number)
    console.log(
      `1,000 calls from 3 processes, sent over ${arrivalMs.toFixed(0)} ms: ${admitted.length} admitted over ` +
        `${((times.at(-1) as number) - (times[0] as number)).toFixed(0)} ms, ${rateOf(times).toFixed(1)} calls/s against a limit of ${LIMIT}; ` +
        `once every worker ran calls (${(allRunning - (times[0] as number)).toFixed(0)} ms in): ${rateOf(steady).toFixed(1)} calls/s, ` +
        `busiest second ${busiestWindow(steady, PER_MS)} (${busiestWindow(times, PER_MS)} counting the bunched start)`,
    )
    expect(Math.abs(rateOf(times) - LIMIT) / LIMIT).toBeLessThan(0.05)
    expect(Math.abs(rateOf(steady) - LIMIT) / LIMIT).toBeLessThan(0.05)
    // Redis spaces the admissions exactly (one every 10 ms); a worker whose event loop stalls runs a few of its calls
    // late, next to later ones, so a second of wall-clock time can hold a few more than the limit. Bounded, not zero.
    expect(busiestWindow(steady, PER_MS)).toBeLessThanOrEqual(LIMIT * 1.2)
    // One call at once (burst 1), then one per interval for as long as calls kept arriving and could wait: no more.
    const intervalMs = PER_MS / LIMIT
    expect(admitted.length).toBeGreaterThanOrEqual(1 + MAX_WAIT_MS / intervalMs)
    expect(admitted.length).toBeLessThanOrEqual(1 + (MAX_WAIT_MS + arrivalMs) / intervalMs + 1)

    // The wait each call was given never passes the bound; the wall clock agrees, give or take a loaded machine.
    expect(Math.max(...admitted.map((r) => r.waitMs))).toBeLessThanOrEqual(MAX_WAIT_MS)
    expect(Math.max(...admitted.map((r) => (r.ranAt as number) - r.startedAt))).toBeLessThan(MAX_WAIT_MS + 500)
  }, 20_000)

  it('with Redis stopped, a layer failing open runs every call and one failing closed refuses every call softly; back after a restart', async () => {
    const [a, b] = fleet as [Worker, Worker]
    await redis.stop()
    try {
      const [open, closed] = await Promise.all([a.send(20), b.send(20, true)])
      expect(open.every((r) => r.ok)).toBe(true)
      expect(closed.map((r) => r.code)).toEqual(Array(20).fill('store_unavailable'))
    } finally {
      await redis.restart()
    }
    // Redis answers again: the call is decided by the limit again (admitted, or refused by the places the first
    // test reserved), never refused for the store.
    let back: Result | undefined
    for (let tries = 0; tries < 50 && (back === undefined || back.code === 'store_unavailable'); tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50))
      back = (await b.send(1, true))[0]
    }
    expect(back?.ok === true || back?.code === 'rate_limited').toBe(true)
  }, 20_000)
})
