import { type BreakerState, circuitBreaker, consecutive, READ_MARGIN_MS, sampling } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, type Logger, type StackEvent, ToolError, type ToolResult } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { manualClock } from '@shallot/testing'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { redisCommands } from './redis-commands.js'
import { useRedis } from './test-support/redis-fixture.js'

const fixture = useRedis()
let client: Redis
beforeAll(() => {
  client = fixture.client
})
let prefixes = 0
const freshPrefix = () => `b${++prefixes}`

const COOLDOWN = 1000

/** A worker's clock: the shared virtual time, seen from a process that started `origin` ms away. */
function workerClock(base: Clock, origin: number): Clock {
  return { now: () => base.now() + origin, sleep: (ms, signal) => base.sleep(ms, signal) }
}

interface Pending {
  q: string
  resolve: (value: string) => void
  reject: (error: unknown) => void
}

/**
 * One simulated worker: its own stack, clock origin and `redisStores()`, sharing one Redis (whose
 * clock is the shared virtual time, through `now`). The tool's calls wait until the test answers them.
 */
function worker(prefix: string, base: ReturnType<typeof manualClock>, origin: number, log: { executions: number }, cooldownMs = COOLDOWN) {
  const clock = workerClock(base, origin)
  const running: Pending[] = []
  const entered = new Map<string, () => void>()
  const tool = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) =>
      new Promise<string>((resolve, reject) => {
        log.executions++
        running.push({ q, resolve, reject })
        entered.get(q)?.()
      }),
  })
  const stores = redisStores({ client, prefix, clock, now: base.now })
  const stack = createStack({
    clock,
    tools: [tool],
    middleware: [circuitBreaker({ store: stores.breaker, policy: consecutive({ threshold: 2 }), cooldownMs, maxHalfOpenMs: 10_000_000 })],
  })
  const events: StackEvent[] = []
  stack.on((event) => events.push(event))
  /** Starts a call; resolves once it runs in the tool or has settled (refused), with its result to come. */
  async function start(q: string): Promise<{ result: Promise<ToolResult> }> {
    const inTool = new Promise<void>((resolve) => entered.set(q, resolve))
    const result = stack.dispatch({ id: q, name: 'search', args: { q } })
    await Promise.race([inTool, result])
    entered.delete(q)
    return { result }
  }
  /** A call that is refused or fails at once: `answer` settles it if it reached the tool. */
  async function call(q: string, answer?: (pending: Pending) => void): Promise<ToolResult> {
    const { result } = await start(q)
    const pending = running.pop()
    if (pending !== undefined) (answer ?? ((p) => p.resolve('ok')))(pending)
    return result
  }
  return { stack, stores, events, running, start, call }
}

const fail = () => new ToolError('upstream_error', 'upstream answered 503')

describe('redis breaker store through real stacks (workers with different clock origins)', () => {
  it('opens in worker A on its failures; worker B then refuses without calling the tool', async () => {
    const base = manualClock()
    const log = { executions: 0 }
    const prefix = freshPrefix()
    const a = worker(prefix, base, 5_000_000, log)
    const b = worker(prefix, base, 12, log)
    for (const q of ['q1', 'q2']) {
      expect(await a.call(q, (p) => p.reject(fail()))).toMatchObject({ ok: false, error: { code: 'upstream_error' } })
    }
    expect(a.events.filter((e) => e.type === 'circuit-breaker.state')).toMatchObject([{ from: 'closed', to: 'open' }])
    const refused = await b.call('q3')
    expect(refused).toMatchObject({ ok: false, error: { code: 'circuit_open' } })
    // The full cooldown, less at most the read margin: B read the opening the instant A wrote it.
    expect(refused.error?.retryAfterMs).toBeGreaterThanOrEqual(COOLDOWN - READ_MARGIN_MS)
    expect(log.executions).toBe(2)
  })

  it('holds the cooldown by Redis time whichever worker clock started first, then admits exactly one probe of 60 concurrent calls', async () => {
    const base = manualClock(1_000)
    const log = { executions: 0 }
    const prefix = freshPrefix()
    // Origins far apart: one worker's clock reads hours ahead, one behind, one near zero.
    const workers = [worker(prefix, base, 7_200_000, log), worker(prefix, base, -3_600_000, log), worker(prefix, base, 3, log)]
    const [a] = workers as [ReturnType<typeof worker>]
    for (const q of ['f1', 'f2']) await a.call(q, (p) => p.reject(fail()))
    await base.advance(COOLDOWN - 1)
    for (const w of workers) expect(await w.call('early')).toMatchObject({ ok: false, error: { code: 'circuit_open', retryAfterMs: 1 } })
    expect(log.executions).toBe(2)

    await base.advance(1)
    const started = await Promise.all(Array.from({ length: 60 }, (_, i) => (workers[i % 3] as ReturnType<typeof worker>).start(`p${i}`)))
    const running = workers.flatMap((w) => w.running)
    expect(running).toHaveLength(1)
    expect(log.executions).toBe(3)
    running[0]?.resolve('ok')
    const results = await Promise.all(started.map((s) => s.result))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(results.filter((r) => r.error?.code === 'circuit_open')).toHaveLength(59)
    expect(await workers[1]?.call('after')).toMatchObject({ ok: true })
  })

  it('never runs two probes at once, for any interleaving of calls, answers and time across three workers', async () => {
    let probeRuns = 0
    type Op = { kind: 'burst'; who: number[] } | { kind: 'answer'; pick: number; ok: boolean } | { kind: 'advance'; ms: number }
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        arbitrary: fc.record({ kind: fc.constant('burst' as const), who: fc.array(fc.nat(2), { minLength: 1, maxLength: 6 }) }),
        weight: 3,
      },
      { arbitrary: fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(), ok: fc.boolean() }), weight: 4 },
      { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 150 }) }), weight: 2 },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: -1e9, max: 1e9 }), { minLength: 3, maxLength: 3 }),
        fc.array(op, { minLength: 20, maxLength: 60 }),
        async (origins, ops) => {
          const base = manualClock()
          const log = { executions: 0 }
          const prefix = freshPrefix()
          const workers = origins.map((origin) => worker(prefix, base, origin, log, 100))
          const probesRunning = () =>
            workers.reduce((n, w) => n + w.events.filter((e) => e.type === 'circuit-breaker.probe').length, 0) -
            workers.reduce((n, w) => n + w.events.filter((e) => e.type === 'circuit-breaker.state' && e.from === 'half-open').length, 0)
          const all = new Map<string, Promise<ToolResult>>()
          for (const step of ops) {
            if (step.kind === 'advance') await base.advance(step.ms)
            else if (step.kind === 'burst') {
              const names = step.who.map((_, n) => `c${all.size + n}`)
              const started = await Promise.all(step.who.map((i, n) => (workers[i] as ReturnType<typeof worker>).start(names[n] as string)))
              for (const [n, s] of started.entries()) all.set(names[n] as string, s.result)
            } else {
              const running = workers.flatMap((w) => w.running.map((p, i) => ({ w, i, p })))
              const chosen = running[step.pick % Math.max(1, running.length)]
              if (chosen === undefined) continue
              chosen.w.running.splice(chosen.i, 1)
              if (step.ok) chosen.p.resolve('ok')
              else chosen.p.reject(fail())
              await all.get(chosen.p.q)
            }
            expect(probesRunning()).toBeLessThanOrEqual(1)
          }
          probeRuns += workers.some((w) => w.events.some((e) => e.type === 'circuit-breaker.probe')) ? 1 : 0
          for (const w of workers) for (const p of w.running.splice(0)) p.resolve('ok')
          await Promise.all(all.values())
        },
      ),
      { numRuns: 25 },
    )
    // The runs must reach half-open, or the property says nothing.
    expect(probeRuns).toBeGreaterThan(0)
  })
})

describe('redis breaker store: the store itself', () => {
  const initial: BreakerState = {
    circuit: 'closed',
    generation: 0,
    counts: { failures: 0 },
    failures: 0,
    openedAt: 0,
    openMs: 0,
    opens: 0,
    probes: [],
    seq: 0,
  }

  it('loses no update among 50 concurrent read-modify-writes from three workers (compare-and-set)', async () => {
    const prefix = freshPrefix()
    const stores = [0, 1, 2].map(() => redisStores({ client, prefix }).breaker)
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        stores[i % 3]?.update('search', (current) => ({ ...(current ?? initial), failures: (current ?? initial).failures + 1 })),
      ),
    )
    expect(await stores[0]?.get('search')).toMatchObject({ failures: 50 })
  })

  it('reads back an opening in each worker clock as the same age by Redis time', async () => {
    const base = manualClock(50_000)
    const prefix = freshPrefix()
    const a = redisStores({ client, prefix, clock: workerClock(base, 1_000_000), now: base.now }).breaker
    const b = redisStores({ client, prefix, clock: workerClock(base, -40_000), now: base.now }).breaker
    await a.update('search', () => ({ ...initial, circuit: 'open', openedAt: 1_050_000, openMs: COOLDOWN }))
    await base.advance(300)
    const seenByB = await b.get('search')
    // B's clock reads 10,300 now; the opening was 300 ms ago by Redis time.
    expect(seenByB?.openedAt).toBe(10_000)
  })

  it('keeps sampling() bucket times in Redis time too', async () => {
    const base = manualClock(0)
    const prefix = freshPrefix()
    const policy = sampling({ windowMs: 1000, buckets: 10, minimumThroughput: 1, failureRatio: 1 })
    const a = redisStores({ client, prefix, clock: workerClock(base, 500_000), now: base.now }).breaker
    const b = redisStores({ client, prefix, clock: workerClock(base, 0), now: base.now }).breaker
    await a.update('s', () => ({ ...initial, counts: policy.record(policy.initial(), true, 500_000) }))
    await base.advance(200)
    expect((await b.get('s'))?.counts).toEqual({ buckets: [[0, 0, 1]] })
  })

  it('rejects the update that finds a corrupt state (the breaker then decides locally), discards it, and starts afresh', async () => {
    const prefix = freshPrefix()
    const warnings: string[] = []
    const logger: Logger = { debug() {}, info() {}, error() {}, warn: (_o, msg) => void warnings.push(msg ?? ''), child: () => logger }
    // This test is about what a corrupt state reads as, not about the deadline: parsing the 200 KB deep value
    // must not meet the default 200 ms one on a loaded machine.
    const store = redisStores({ client, prefix, logger, timeoutMs: 30_000 }).breaker
    const key = `${prefix}:{search}:breaker`
    const deep = `{"counts":${'['.repeat(100_000)}${']'.repeat(100_000)}}`
    const hostile = [
      'not json',
      '"open"',
      'null',
      '42',
      '[]',
      '{"circuit":"ajar"}',
      JSON.stringify({ ...initial, probes: [[1]] }),
      '{"__proto__":{"circuit":"open"}}',
      deep,
    ]
    for (const corrupt of hostile) {
      await client.hset(key, { s: corrupt, v: '7' })
      let called = false
      const change = (current: BreakerState | undefined) => {
        called = true
        return current ?? initial
      }
      await expect(store.update('search', change)).rejects.toMatchObject({
        code: 'store_unavailable',
        message: expect.stringContaining('corrupt'),
      })
      expect(called).toBe(false)
      expect(await client.exists(key)).toBe(0)
    }
    await client.set(key, 'open') // another Redis type altogether
    await expect(store.get('search')).rejects.toMatchObject({ message: expect.stringContaining('not a hash') })
    let seen: unknown = 'not called'
    await store.update('search', (current) => {
      seen = current
      return { ...initial, failures: 1 }
    })
    expect(seen).toBeUndefined()
    expect(await store.get('search')).toMatchObject({ failures: 1 })
    expect(warnings.filter((w) => w.includes('corrupt'))).toHaveLength(hostile.length + 1)
  })

  it('never deletes a state another worker wrote after the corrupt one was read', async () => {
    const prefix = freshPrefix()
    const key = `${prefix}:{search}:breaker`
    await client.hset(key, { s: 'not json', v: '3' })
    // The version moved on: this discard must leave the newer state alone.
    await client.hset(key, { s: JSON.stringify(initial), v: '4' })
    expect(await redisCommands(client).breakerDiscard(key, '3')).toBe(0)
    expect(await client.hget(key, 'v')).toBe('4')
  })

  it('through a stack: a corrupt breaker state neither crashes the call nor lets a write with an unknown outcome run again', async () => {
    const prefix = freshPrefix()
    let executions = 0
    const charge = defineTool({
      name: 'charge_card',
      description: 'charge',
      input: z.object({ order: z.string() }),
      execute: ({ order }) => {
        executions++
        if (order === 'o-1') throw new ToolError('timeout', 'the bank did not answer')
        return { charged: order }
      },
    })
    const clock = manualClock()
    const stores = redisStores({ client, prefix, clock })
    const stack = createStack({
      clock,
      tools: [charge],
      middleware: [
        idempotency({ store: stores.idempotency }),
        circuitBreaker({ store: stores.breaker, policy: consecutive({ threshold: 2 }) }),
      ],
    })
    const call = (order: string) => stack.dispatch({ id: order, name: 'charge_card', args: { order } })
    expect((await call('o-1')).error?.code).toBe('timeout')
    await client.hset(`${prefix}:{charge_card}:breaker`, { s: '{"circuit":"closed","generation":"NaN"}' })
    const again = await call('o-1')
    expect(again.error?.code).toBe('outcome_unknown')
    // The next read of the breaker, once the worker's view is storeRefreshMs old, finds the corrupt value.
    await clock.advance(1000)
    const other = await call('o-2')
    expect(other).toMatchObject({ ok: true, value: { charged: 'o-2' } })
    expect(other.trace.map((e) => e.type)).toContain('circuit-breaker.store_error')
    expect(executions).toBe(2)
    const next = await call('o-3')
    expect(next.ok).toBe(true)
    expect(next.trace.map((e) => e.type)).not.toContain('circuit-breaker.store_error')
  })

  it('writes nothing when change returns the state it was given', async () => {
    const prefix = freshPrefix()
    const store = redisStores({ client, prefix }).breaker
    expect(await store.update('search', (current) => current ?? initial)).toBe(initial)
    const again = await store.update('search', (current) => current as BreakerState)
    expect(again).toMatchObject({ ...initial, openedAt: expect.any(Number) })
    expect(await client.hget(`${prefix}:{search}:breaker`, 'v')).toBe('1')
  })
})
