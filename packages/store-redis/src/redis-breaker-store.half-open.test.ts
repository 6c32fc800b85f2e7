import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import type { Redis } from 'ioredis'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { redisKeys } from './redis-keys.js'
import { useRedis } from './test-support/redis-fixture.js'

// Half-open sampling (circuit-breaker's halfOpenSuccesses) through the real store: the trial's tally
// rides in the state's counts, which the store keeps as JSON, so workers add up one trial.

const fixture = useRedis()
let client: Redis
beforeAll(() => {
  client = fixture.client
})

/** A worker: its own stack, clock origin and stores on the shared Redis; the tool's calls wait for the test. */
function worker(prefix: string, base: ReturnType<typeof manualClock>, origin: number) {
  const clock: Clock = { now: () => base.now() + origin, sleep: (ms, signal) => base.sleep(ms, signal) }
  const running: Array<{ resolve: (v: string) => void; reject: (e: unknown) => void }> = []
  let entered: () => void = () => {}
  const tool = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () =>
      new Promise<string>((resolve, reject) => {
        running.push({ resolve, reject })
        entered()
      }),
  })
  const stores = redisStores({ client, prefix, clock, now: base.now })
  const breaker = circuitBreaker({
    store: stores.breaker,
    policy: consecutive({ threshold: 1 }),
    cooldownMs: 1000,
    halfOpenProbes: 2,
    halfOpenSuccesses: 2,
  })
  const stack = createStack({ clock, tools: [tool], middleware: [breaker] })
  /** Starts a call and waits until it runs in the tool or settled (refused). */
  async function start(q: string): Promise<{ result: Promise<ToolResult> }> {
    const inTool = new Promise<void>((resolve) => {
      entered = resolve
    })
    const result = stack.dispatch({ id: q, name: 'search', args: { q } })
    await Promise.race([inTool, result])
    return { result }
  }
  return { start, running }
}

const stored = async (prefix: string) => JSON.parse((await client.hget(redisKeys(prefix).breaker('search'), 's')) as string)

describe('redis breaker store and half-open sampling', () => {
  it('closes only when the second of two probes succeeds, the probes run by two workers', async () => {
    const base = manualClock()
    const a = worker('ho1', base, 9_000_000)
    const b = worker('ho1', base, 7)
    const { result: trip } = await a.start('trip')
    a.running.shift()?.reject(new ToolError('upstream_error', 'upstream answered 503'))
    expect((await trip).error?.code).toBe('upstream_error')
    await base.advance(1000)

    const { result: p1 } = await a.start('p1')
    const { result: p2 } = await b.start('p2')
    const { result: p3 } = await b.start('p3')
    expect((await p3).error?.code).toBe('circuit_open')
    a.running.shift()?.resolve('ok')
    expect((await p1).ok).toBe(true)
    expect(await stored('ho1')).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })
    b.running.shift()?.resolve('ok')
    expect((await p2).ok).toBe(true)
    expect(await stored('ho1')).toMatchObject({ circuit: 'closed', counts: { failures: 0 } })
  })

  it('counts a corrupt tally read back from Redis as no success', async () => {
    const base = manualClock()
    const a = worker('ho2', base, 0)
    const { result: trip } = await a.start('trip')
    a.running.shift()?.reject(new ToolError('upstream_error', 'upstream answered 503'))
    await trip
    await base.advance(1000)
    const { result: probe } = await a.start('probe')
    const state = await stored('ho2')
    await client.hset(redisKeys('ho2').breaker('search'), 's', JSON.stringify({ ...state, counts: { probeSuccesses: 'many' } }))
    a.running.shift()?.resolve('ok')
    expect((await probe).ok).toBe(true)
    expect(await stored('ho2')).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })
  })
})
