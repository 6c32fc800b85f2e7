import { createRun, createStack, defineTool, type StackEvent, ToolError } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { constant, retry } from './index.js'

const upstream = () => new ToolError('upstream_error', 'HTTP 503: Service Unavailable', { category: 'transient' })

/** A read whose upstream answers from `script` per request (true: success, a string: that transient code), then fails forever. */
function scripted(script: Array<boolean | string> = []) {
  const counter = { requests: 0 }
  const tool = defineTool({
    name: 'find_order',
    description: 'Looks an order up',
    input: z.object({ id: z.string() }),
    effect: 'read',
    execute: ({ id }) => {
      const ok = script[counter.requests++] ?? false
      if (typeof ok === 'string') throw new ToolError(ok, `failed with ${ok}`, { category: 'transient' })
      if (!ok) throw upstream()
      return `order ${id}`
    },
  })
  return Object.assign(counter, { tool })
}

async function setup(script?: Array<boolean | string>, state: Record<string, never> = {}) {
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
  return { world, call, events, run, clock }
}

describe('retry: an identical call that already ran out of retries in this run is answered from that failure', () => {
  it('answers the model’s repeat without a request, with the same code and a hint that names what can work', async () => {
    const { world, call, events } = await setup()
    expect((await call('o-1', 'c1')).ok).toBe(false)
    expect(world.requests).toBe(3)
    const again = await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    expect(again.error).toMatchObject({ code: 'upstream_error', message: 'HTTP 503: Service Unavailable', retryable: false })
    expect(again.error?.hint).toMatch(/not sent to the upstream\. Use another tool or source, change the arguments, or tell the user/)
    expect(again.error?.hint).not.toMatch(/try again/i)
    expect(events.map((e) => (e as { reason?: string }).reason)).toEqual(['max_attempts', 'exhausted_in_run'])
  })

  it('past a minute the repeat gets one request and no retries (the upstream may be back), and a success forgets the call', async () => {
    const { world, call, clock } = await setup([false, false, false, false, true, false, false, false])
    await call('o-1', 'c1')
    await clock.advance(59_000)
    await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    await clock.advance(1_000)
    expect((await call('o-1', 'c3')).ok).toBe(false)
    expect(world.requests).toBe(4)
    await clock.advance(60_000)
    expect((await call('o-1', 'c4')).ok).toBe(true)
    expect(world.requests).toBe(5)
    await call('o-1', 'c5')
    expect(world.requests).toBe(8)
  })

  it('gives the repeat one request, not the remembered failure, when the attempts failed in different ways (not a dead upstream)', async () => {
    const { world, call } = await setup([false, 'network_error', false, true])
    expect((await call('o-1', 'c1')).ok).toBe(false)
    expect(world.requests).toBe(3)
    expect(await call('o-1', 'c2')).toMatchObject({ ok: true, value: 'order o-1' })
    expect(world.requests).toBe(4)
  })

  it('still retries a different call, and a transient 503 that recovers on the 2nd attempt still succeeds', async () => {
    const { world, call } = await setup([false, false, false, false, true])
    await call('o-1', 'c1')
    expect(world.requests).toBe(3)
    const other = await call('o-2', 'c2')
    expect(other).toMatchObject({ ok: true, value: 'order o-2' })
    expect(world.requests).toBe(5)
  })

  it('keeps the memory in run state as plain JSON, and reads planted values as nothing remembered', async () => {
    const { call, run } = await setup()
    await call('o-1', 'c1')
    expect(JSON.parse(JSON.stringify(run.state))).toEqual(run.state)
    const fingerprint = (run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string }>)[0]?.fingerprint
    const error = { code: 'upstream_error', category: 'transient', message: 'm' }
    for (const planted of [
      { __proto__: null, x: 1 },
      'o-1',
      [1, null, {}],
      JSON.parse('{"__proto__":["x"]}'),
      [{ fingerprint, at: Number.NaN, error }],
      [{ fingerprint: 7, at: 0, error }],
      JSON.parse(`[{"__proto__":{"fingerprint":"${fingerprint}","at":0}}]`),
    ]) {
      const fresh = await setup(undefined, { 'shallot.retry.exhausted': planted } as never)
      await fresh.call('o-1', 'c1')
      expect(fresh.world.requests).toBe(3)
    }
  })

  it('sends a request for a remembered call whose error is malformed or missing (a run checkpointed before decision 410)', async () => {
    const probe = await setup()
    await probe.call('o-1', 'c1')
    const fingerprint = (probe.run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string }>)[0]?.fingerprint as string
    for (const error of [
      undefined,
      { code: 'Not Snake', category: 'transient', message: 'm' },
      { code: 'x', category: 'bogus', message: 'm' },
    ]) {
      for (const planted of [[fingerprint], [{ fingerprint, at: 0, error }]]) {
        const fresh = await setup(undefined, { 'shallot.retry.exhausted': planted } as never)
        const result = await fresh.call('o-1', 'c1')
        expect(result.error?.code).toBe('upstream_error')
        expect(fresh.world.requests).toBe(1)
      }
    }
  })

  it('a clock that went back (a resumed run on another machine) sends the repeat rather than trust the memory', async () => {
    const { world, call, run, clock } = await setup()
    await call('o-1', 'c1')
    const [entry] = run.state['shallot.retry.exhausted'] as Array<{ at: number }>
    ;(entry as { at: number }).at = clock.now() + 5_000
    await call('o-1', 'c2')
    expect(world.requests).toBe(4)
  })

  it('handles parallel identical calls: each runs its own retries, the next one after them is answered from the failure', async () => {
    const { world, call } = await setup()
    await Promise.all([call('o-1', 'c1'), call('o-1', 'c2')])
    expect(world.requests).toBe(6)
    const [third, fourth] = await Promise.all([call('o-1', 'c3'), call('o-1', 'c4')])
    expect(world.requests).toBe(6)
    expect([third.error?.code, fourth.error?.code]).toEqual(['upstream_error', 'upstream_error'])
  })
})
