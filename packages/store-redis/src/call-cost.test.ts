// What one successful call costs the shared Redis through the default stack, counted by the server
// itself: round trips are the commands a client sent (MONITOR marks those a script ran with "lua"),
// commands are everything INFO commandstats counts, the scripts' own commands included.
import { createStack, defineTool, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { Redis } from 'ioredis'
import { defaultMiddleware } from 'shallot'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'

const fixture = useRedis()
let monitor: Redis
let sent: string[] = []
beforeAll(async () => {
  monitor = new Redis(fixture.server.url, { lazyConnect: true })
  await monitor.connect()
  const feed = await monitor.monitor()
  feed.on('monitor', (_time: string, args: string[], source: string) => {
    if (!source.includes('lua')) sent.push(String(args[0]).toLowerCase())
  })
  return () => monitor.disconnect()
})

/** Every command Redis ran so far, by name, from INFO commandstats (scripts' commands included). */
async function commandCounts(): Promise<Map<string, number>> {
  const info = await fixture.client.info('commandstats')
  const counts = new Map<string, number>()
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(name as string, Number(calls))
  return counts
}

/** What `work` cost Redis: the commands clients sent (round trips) and every command it ran, without the counting itself. */
async function cost(work: () => Promise<void>): Promise<{ roundTrips: number; commands: number; byName: Record<string, number> }> {
  // MONITOR answers asynchronously: an ECHO through it marks where the counted stretch ends.
  const settle = async () => {
    await fixture.client.echo('mark')
    await expect.poll(() => sent.length > 0 && sent.at(-1) === 'echo').toBe(true)
  }
  await settle()
  const before = await commandCounts()
  sent = []
  await work()
  await settle()
  const after = await commandCounts()
  const byName: Record<string, number> = {}
  for (const [name, calls] of after) {
    if (name === 'info' || name === 'echo' || name === 'monitor') continue
    const delta = calls - (before.get(name) ?? 0)
    if (delta > 0) byName[name] = delta
  }
  const roundTrips = sent.filter((name) => name !== 'echo' && name !== 'info').length
  return { roundTrips, commands: Object.values(byName).reduce((a, b) => a + b, 0), byName }
}

const input = z.object({ id: z.number() })
const lookup = defineTool({ name: 'lookup', description: 'Look up a number', input, effect: 'read', execute: ({ id }) => id + 1 })
const record = defineTool({ name: 'record', description: 'Record a number', input, effect: 'write', execute: ({ id }) => id + 1 })

function fleetStack(prefix: string, refillFlushMs?: number) {
  const clock = manualClock(1_000)
  const stores = redisStores({ client: fixture.client, prefix, clock, retryBudget: refillFlushMs === undefined ? {} : { refillFlushMs } })
  const middleware = defaultMiddleware({
    idempotency: { store: stores.idempotency },
    circuitBreaker: { store: stores.breaker },
    retry: { retryBudget: stores.retryBudget },
  })
  const stack = createStack({ clock, middleware, tools: [lookup, record] })
  let serial = 0
  const call = async (name: string): Promise<ToolResult> => stack.dispatch({ id: `c${++serial}`, name, args: { id: serial } })
  return { clock, call }
}

const CALLS = 20

describe('what a successful call costs Redis through defaultMiddleware() with redisStores()', () => {
  it('a read costs no round trip once warm, and a write at most two (claim, record)', async () => {
    const { call } = fleetStack('cost')
    // Warm-up: the scripts are loaded, each breaker read once.
    expect(await call('lookup')).toMatchObject({ ok: true })
    expect(await call('record')).toMatchObject({ ok: true })

    const reads = await cost(async () => {
      for (let i = 0; i < CALLS; i++) expect(await call('lookup')).toMatchObject({ ok: true })
    })
    const writes = await cost(async () => {
      for (let i = 0; i < CALLS; i++) expect(await call('record')).toMatchObject({ ok: true })
    })
    const perCall = (n: number) => n / CALLS
    console.info(
      `redis per read: ${perCall(reads.roundTrips)} round trips, ${perCall(reads.commands)} commands ${JSON.stringify(reads.byName)}; ` +
        `per write: ${perCall(writes.roundTrips)} round trips, ${perCall(writes.commands)} commands ${JSON.stringify(writes.byName)}`,
    )
    expect({ roundTrips: perCall(reads.roundTrips), commands: perCall(reads.commands) }).toEqual({ roundTrips: 0, commands: 0 })
    expect(perCall(writes.roundTrips)).toBeLessThanOrEqual(2)
  })

  it('reads a closed breaker again once storeRefreshMs passed: one round trip, no write', async () => {
    // The budget's refills are held longer than the test runs, so what is counted is the breaker's check alone.
    const { clock, call } = fleetStack('refresh', 60_000)
    expect(await call('lookup')).toMatchObject({ ok: true })
    await clock.advance(1000)
    const check = await cost(async () => {
      expect(await call('lookup')).toMatchObject({ ok: true })
    })
    expect(check.roundTrips).toBe(1)
    expect(Object.keys(check.byName).sort()).toEqual(['evalsha', 'hmget', 'time', 'type'])
  })
})
