import { type BreakerState, circuitBreaker, consecutive, READ_MARGIN_MS } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, type StackEvent, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { PostgresStores } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'
import { spyLogger } from './test-support/spy-logger.js'

const pg = usePostgres()
const COOLDOWN = 1000

/** A worker's clock: the shared virtual time, seen from a process that started `origin` ms away. */
function workerClock(base: Clock, origin: number): Clock {
  return { now: () => base.now() + origin, sleep: (ms, signal) => base.sleep(ms, signal) }
}

interface Pending {
  resolve: (value: string) => void
  reject: (error: unknown) => void
}

/**
 * One simulated worker: its own stack, clock origin and `postgresStores()` on one table prefix
 * (whose clock is the shared virtual time, through `now`). Its tool's calls wait until the test answers them.
 */
async function worker(tablePrefix: string, base: ReturnType<typeof manualClock>, origin: number, log: { executions: number }) {
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
        running.push({ resolve, reject })
        entered.get(q)?.()
      }),
  })
  const stores = await pg.stores({ tablePrefix, clock, now: base.now, logger: spyLogger() })
  const stack = createStack({
    clock,
    tools: [tool],
    middleware: [
      circuitBreaker({ store: stores.breaker, policy: consecutive({ threshold: 2 }), cooldownMs: COOLDOWN, maxHalfOpenMs: 10_000_000 }),
    ],
  })
  const events: StackEvent[] = []
  stack.on((event) => events.push(event))
  async function start(q: string): Promise<{ result: Promise<ToolResult> }> {
    const inTool = new Promise<void>((resolve) => entered.set(q, resolve))
    const result = stack.dispatch({ id: q, name: 'search', args: { q } })
    await Promise.race([inTool, result])
    entered.delete(q)
    return { result }
  }
  async function call(q: string, answer: (pending: Pending) => void = (p) => p.resolve('ok')): Promise<ToolResult> {
    const { result } = await start(q)
    const pending = running.pop()
    if (pending !== undefined) answer(pending)
    return result
  }
  return { stores, events, running, start, call }
}

const fail = (p: Pending) => p.reject(new ToolError('upstream_error', 'upstream answered 503'))
let prefixes = 0
const freshPrefix = () => `brk${++prefixes}_`

describe('postgres breaker store through real stacks (workers with different clock origins)', () => {
  it('opens in worker A on its failures; worker B then refuses without calling the tool', async () => {
    const base = manualClock()
    const log = { executions: 0 }
    const prefix = freshPrefix()
    const a = await worker(prefix, base, 5_000_000, log)
    const b = await worker(prefix, base, 12, log)
    for (const q of ['q1', 'q2']) expect(await a.call(q, fail)).toMatchObject({ ok: false, error: { code: 'upstream_error' } })
    expect(a.events.filter((e) => e.type === 'circuit-breaker.state')).toMatchObject([{ from: 'closed', to: 'open' }])
    const refused = await b.call('q3')
    expect(refused).toMatchObject({ ok: false, error: { code: 'circuit_open' } })
    expect(refused.error?.retryAfterMs).toBeGreaterThanOrEqual(COOLDOWN - READ_MARGIN_MS)
    expect(log.executions).toBe(2)
  })

  it('holds the cooldown by the server’s time whichever worker clock started first, then admits one probe of 60 concurrent calls', async () => {
    const base = manualClock(1_000)
    const log = { executions: 0 }
    const prefix = freshPrefix()
    const workers = await Promise.all([
      worker(prefix, base, 7_200_000, log),
      worker(prefix, base, -3_600_000, log),
      worker(prefix, base, 3, log),
    ])
    const [a] = workers
    for (const q of ['f1', 'f2']) await a.call(q, fail)
    await base.advance(COOLDOWN - 1)
    for (const w of workers) expect(await w.call('early')).toMatchObject({ ok: false, error: { code: 'circuit_open', retryAfterMs: 1 } })
    expect(log.executions).toBe(2)

    await base.advance(1)
    const started = await Promise.all(Array.from({ length: 60 }, (_, i) => (workers[i % 3] as (typeof workers)[0]).start(`p${i}`)))
    const running = workers.flatMap((w) => w.running)
    expect(running).toHaveLength(1)
    running[0]?.resolve('ok')
    const results = await Promise.all(started.map((s) => s.result))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(results.filter((r) => r.error?.code === 'circuit_open')).toHaveLength(59)
    expect(await workers[1].call('after')).toMatchObject({ ok: true })
  })
})

describe('postgres breaker store: corrupt states read as none, are logged, and are replaced', () => {
  const corrupt: Array<[string, string]> = [
    ['a JSON string', '"open"'],
    ['JSON null', 'null'],
    ['a number', '7'],
    ['an array', '[{"circuit": "open"}]'],
    [
      'wrong field types',
      '{"circuit": "open", "generation": "1", "counts": {}, "failures": 2, "openedAt": 0, "openMs": 1000, "opens": 1, "probes": [], "seq": 0}',
    ],
    [
      'an unknown circuit',
      '{"circuit": "ajar", "generation": 1, "counts": {}, "failures": 2, "openedAt": 0, "openMs": 1000, "opens": 1, "probes": [], "seq": 0}',
    ],
    [
      'a __proto__ key',
      '{"__proto__": {"circuit": "open"}, "circuit": "open", "generation": 1, "counts": {}, "failures": 2, "openedAt": 0, "openMs": 1000, "opens": 1, "probes": [], "seq": 0}',
    ],
    ['text that is not JSON', '{"circuit": '],
  ]
  for (const [what, text] of corrupt) {
    it(`treats a state that is ${what} as a closed circuit`, async () => {
      const base = manualClock()
      const log = { executions: 0 }
      const prefix = freshPrefix()
      const a = await worker(prefix, base, 0, log)
      for (const q of ['f1', 'f2']) await a.call(q, fail)
      expect(await a.call('refused')).toMatchObject({ ok: false, error: { code: 'circuit_open' } })
      await pg.pool.query(`UPDATE "${prefix}breakers" SET state = $1`, [text])
      const fresh = await worker(prefix, base, 0, log)
      expect(await fresh.stores.breaker.get('search')).toBeUndefined()
      expect(await fresh.call('ok')).toMatchObject({ ok: true })
      // A success of a closed circuit writes nothing; the next write (a failure) replaces the corrupt state.
      expect(await fresh.call('f3', fail)).toMatchObject({ ok: false, error: { code: 'upstream_error' } })
      const { rows } = await pg.pool.query(`SELECT state FROM "${prefix}breakers"`)
      expect(JSON.parse(rows[0].state)).toMatchObject({ circuit: 'closed', counts: { failures: 1 } })
      expect(({} as Record<string, unknown>).circuit).toBeUndefined()
    })
  }
})

describe('postgres breaker store: expiry', () => {
  it('forgets a state nobody touched for breakerTtlMs, and sweep() deletes its row', async () => {
    const base = manualClock()
    const stores: PostgresStores = await pg.stores({ now: base.now, breakerTtlMs: 5000 })
    const opened: BreakerState = {
      circuit: 'open',
      generation: 1,
      counts: {},
      failures: 2,
      openedAt: 0,
      openMs: 1000,
      opens: 1,
      probes: [],
      seq: 0,
    }
    await stores.breaker.update('k', () => opened)
    expect(await stores.breaker.get('k')).toMatchObject({ circuit: 'open' })
    await base.advance(5000)
    expect(await stores.breaker.get('k')).toBeUndefined()
    expect(await stores.sweep()).toMatchObject({ breakers: 1 })
  })
})
