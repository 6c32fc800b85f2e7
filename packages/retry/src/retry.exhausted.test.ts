import { createRun, createStack, defineTool, type StackEvent, ToolError } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { constant, retry } from './index.js'

const upstream = () => new ToolError('upstream_error', 'HTTP 503: Service Unavailable', { category: 'transient' })

/** A read whose upstream answers from `script` per request (true: success), then fails forever. */
function scripted(script: boolean[] = []) {
  const counter = { requests: 0 }
  const tool = defineTool({
    name: 'find_order',
    description: 'Looks an order up',
    input: z.object({ id: z.string() }),
    effect: 'read',
    execute: ({ id }) => {
      const ok = script[counter.requests++] ?? false
      if (!ok) throw upstream()
      return `order ${id}`
    },
  })
  return Object.assign(counter, { tool })
}

async function setup(script?: boolean[], state: Record<string, never> = {}) {
  const clock = manualClock()
  const world = scripted(script)
  const events: StackEvent[] = []
  const stack = createStack({
    tools: [world.tool],
    middleware: [retry({ backoff: constant(100), maxAttempts: 3 })],
    clock,
    random: seededRandom(1),
  })
  stack.on((event) => {
    if (event.type === 'retry.stopped') events.push(event)
  })
  const run = createRun({ id: 'run-1', state })
  const call = async (id: string, callId: string) => {
    const pending = stack.dispatch({ id: callId, name: 'find_order', args: { id } }, { run })
    let settled = false
    pending.then(
      () => (settled = true),
      () => (settled = true),
    )
    while (!settled) {
      if (clock.pending === 0) await new Promise<void>((resolve) => setImmediate(resolve))
      else await clock.runAll()
    }
    return pending
  }
  return { world, call, events, run }
}

describe('retry: an identical call that already ran out of retries in this run is not retried again', () => {
  it('gives the model’s repeat one request, and says why', async () => {
    const { world, call, events } = await setup()
    expect((await call('o-1', 'c1')).ok).toBe(false)
    expect(world.requests).toBe(3)
    const again = await call('o-1', 'c2')
    expect(again.error?.code).toBe('upstream_error')
    expect(world.requests).toBe(4)
    expect(events.map((e) => (e as { reason?: string }).reason)).toEqual(['max_attempts', 'exhausted_in_run'])
  })

  it('still retries a different call, and a transient 503 that recovers on the 2nd attempt still succeeds', async () => {
    const { world, call } = await setup([false, false, false, false, true])
    await call('o-1', 'c1')
    expect(world.requests).toBe(3)
    const other = await call('o-2', 'c2')
    expect(other).toMatchObject({ ok: true, value: 'order o-2' })
    expect(world.requests).toBe(5)
  })

  it('forgets a call once it succeeds, so a later failure of it gets its retries again', async () => {
    const { world, call } = await setup([false, false, false, true, false, false, false])
    await call('o-1', 'c1')
    expect((await call('o-1', 'c2')).ok).toBe(true)
    expect(world.requests).toBe(4)
    await call('o-1', 'c3')
    expect(world.requests).toBe(7)
  })

  it('keeps the memory in run state as plain JSON, and reads planted values as nothing remembered', async () => {
    const { call, run } = await setup()
    await call('o-1', 'c1')
    expect(JSON.parse(JSON.stringify(run.state))).toEqual(run.state)
    for (const planted of [{ __proto__: null, x: 1 }, 'o-1', [1, null, {}], JSON.parse('{"__proto__":["x"]}')]) {
      const fresh = await setup(undefined, { 'shallot.retry.exhausted': planted } as never)
      await fresh.call('o-1', 'c1')
      expect(fresh.world.requests).toBe(3)
    }
  })

  it('handles parallel identical calls: each runs its own retries, the next one after them does not', async () => {
    const { world, call } = await setup()
    await Promise.all([call('o-1', 'c1'), call('o-1', 'c2')])
    expect(world.requests).toBe(6)
    await call('o-1', 'c3')
    expect(world.requests).toBe(7)
  })
})
