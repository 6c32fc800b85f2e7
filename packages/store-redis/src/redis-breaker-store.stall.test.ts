import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, type StackEvent, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import type { Redis } from 'ioredis'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'

// A loaded machine preempts a worker (or collects its garbage) at any instruction, so two reads of its
// clock a few microseconds apart in the code may be milliseconds apart in time. These workers' clocks
// show that on every read: each read finds a few ms more passed, a different few in each worker (Redis's
// clock, the shared virtual time, stands still). The breaker must still let exactly one half-open probe through fleet-wide: a probe
// slot another worker took a moment ago must never read as a time from this worker's future (which
// the breaker takes for another clock's, and forgets).

const fixture = useRedis()
let client: Redis
beforeAll(() => {
  client = fixture.client
})

const COOLDOWN = 1000

/** A worker's clock: the shared virtual time from its own origin, `stallMs` later on each read. */
function stallingClock(base: Clock, origin: number, stallMs: number): Clock {
  let stalled = 0
  return { now: () => base.now() + origin + (stalled += stallMs), sleep: (ms, signal) => base.sleep(ms, signal) }
}

interface Log {
  /** The calls that reached the tool. */
  inTool: number
  /** Answers the calls waiting in the tool. */
  release: Array<() => void>
  entered: Map<string, () => void>
}

/** A worker on the shared Redis: "trip" calls fail at once, the others wait in the tool until the test releases them. */
function worker(base: ReturnType<typeof manualClock>, origin: number, stallMs: number, log: Log) {
  const clock = stallingClock(base, origin, stallMs)
  const tool = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => {
      log.inTool++
      log.entered.get(q)?.()
      if (q.startsWith('trip')) return Promise.reject(new ToolError('upstream_error', 'upstream answered 503'))
      return new Promise<string>((resolve) => log.release.push(() => resolve('ok')))
    },
  })
  const stores = redisStores({ client, prefix: 'stall', clock, now: base.now })
  const breaker = circuitBreaker({
    store: stores.breaker,
    policy: consecutive({ threshold: 2 }),
    cooldownMs: COOLDOWN,
    maxHalfOpenMs: 60_000,
  })
  const stack = createStack({ clock, tools: [tool], middleware: [breaker] })
  const events: StackEvent[] = []
  stack.on((event) => events.push(event))
  const call = (q: string): Promise<ToolResult> => stack.dispatch({ id: q, name: 'search', args: { q } })
  /** A call, and a promise that settles once it was let into the tool or refused. */
  const start = (q: string) => {
    const inTool = new Promise<void>((resolve) => log.entered.set(q, resolve))
    const result = call(q)
    return { result, decided: Promise.race([inTool, result]) }
  }
  return { call, start, events }
}

describe('redis breaker store on workers whose clocks move between two reads', () => {
  it('admits exactly one probe of 96 concurrent half-open claims from 8 workers on one Redis key', async () => {
    const base = manualClock(10_000)
    const log: Log = { inTool: 0, release: [], entered: new Map() }
    const workers = Array.from({ length: 8 }, (_, i) => worker(base, i * 1_000_003, 2 * i, log))
    const [a] = workers as [ReturnType<typeof worker>]
    for (const q of ['trip1', 'trip2']) expect(await a.call(q)).toMatchObject({ ok: false, error: { code: 'upstream_error' } })
    await base.advance(COOLDOWN)

    const calls = workers.flatMap((w, i) => Array.from({ length: 12 }, (_, n) => w.start(`claim-${i}-${n}`)))
    // Every call is decided (refused, or let in) while the probes let in still hold their slots.
    await Promise.all(calls.map((c) => c.decided))
    const probes = workers.flatMap((w) => w.events.filter((e) => e.type === 'circuit-breaker.probe'))
    expect(probes).toHaveLength(1)
    expect(log.inTool).toBe(3)
    for (const release of log.release.splice(0)) release()
    const results = await Promise.all(calls.map((c) => c.result))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(results.filter((r) => r.error?.code === 'circuit_open')).toHaveLength(95)
    expect(workers.flatMap((w) => w.events.filter((e) => e.type === 'circuit-breaker.store_error'))).toEqual([])
  })
})
