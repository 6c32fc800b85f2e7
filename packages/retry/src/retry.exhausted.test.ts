import { createRun, createStack, defineTool, type StackEvent, type ToolEffect, ToolError } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { probeCooldownMs } from './exhausted-calls.js'
import { constant, retry } from './index.js'

const upstream = () => new ToolError('upstream_error', 'HTTP 503: Service Unavailable', { category: 'transient' })

/** One request's fate: true answers, a string fails with that transient code, a number fails with a 429 asking for that many ms. */
type Fate = boolean | string | number

/** A tool whose upstream answers from `script` per request (then fails with a 503 forever); each request takes `latencyMs`. */
function scripted(clock: ReturnType<typeof manualClock>, script: Fate[], effect: ToolEffect, latencyMs: number) {
  const counter = { requests: 0, keys: [] as Array<string | undefined> }
  const tool = defineTool({
    name: 'find_order',
    description: 'Looks an order up',
    input: z.object({ id: z.string() }),
    effect,
    execute: async ({ id }, { signal, idempotencyKey }) => {
      const fate = script[counter.requests++] ?? false
      counter.keys.push(idempotencyKey)
      if (latencyMs > 0) await clock.sleep(latencyMs, signal)
      if (typeof fate === 'number')
        throw new ToolError('rate_limited', 'HTTP 429', { category: 'transient', safeToRepeat: true, retryAfterMs: fate })
      if (typeof fate === 'string') throw new ToolError(fate, `failed with ${fate}`, { category: 'transient' })
      if (!fate) throw upstream()
      return `order ${id}`
    },
  })
  return Object.assign(counter, { tool })
}

interface Setup {
  script?: Fate[]
  state?: Record<string, unknown>
  effect?: ToolEffect
  latencyMs?: number
}

function setup({ script = [], state = {}, effect = 'read', latencyMs = 0 }: Setup = {}) {
  const clock = manualClock()
  const world = scripted(clock, script, effect, latencyMs)
  const events: StackEvent[] = []
  const stack = createStack({
    tools: [world.tool],
    middleware: [retry({ backoff: constant(100), maxAttempts: 3, maxRetryAfterMs: 8000 })],
    clock,
    random: seededRandom(1),
  })
  stack.on((event) => {
    if (event.type === 'retry.stopped' || event.type === 'retry.scheduled') events.push(event)
  })
  const run = createRun({ id: 'run-1', state: state as never })
  const call = async (id: string, callId: string, signal?: AbortSignal) => {
    const pending = stack.dispatch({ id: callId, name: 'find_order', args: { id } }, signal === undefined ? { run } : { run, signal })
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

const reasons = (events: StackEvent[]) => events.filter((e) => e.type === 'retry.stopped').map((e) => (e as { reason?: string }).reason)

describe('the cooldown of a call whose retries ran out', () => {
  it('doubles with each failed request, from 1 s after two, and never undercuts the service’s Retry-After', () => {
    expect([1, 2, 3, 4, 5].map((n) => probeCooldownMs(n, undefined))).toEqual([1000, 1000, 2000, 4000, 8000])
    expect(probeCooldownMs(3, 5000)).toBe(5000)
    expect(probeCooldownMs(3, 500)).toBe(2000)
    expect(probeCooldownMs(10_000, undefined)).toBe(600_000)
    expect(probeCooldownMs(3, 1e12)).toBe(600_000)
  })
})

describe('retry: an identical call that already ran out of retries in this run', () => {
  it('is answered from the failure inside its cooldown, without a request, with a hint that says when it will be sent', async () => {
    const { world, call, events } = setup()
    const first = await call('o-1', 'c1')
    expect(first.error?.hint).toMatch(
      /failed all 3 attempts .*; the identical call will not be sent again for 2 s\. Use another tool or source/,
    )
    expect(world.requests).toBe(3)
    const again = await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    expect(again.error).toMatchObject({ code: 'upstream_error', message: 'HTTP 503: Service Unavailable', retryable: false })
    expect(again.error?.hint).toMatch(
      /failed 3 requests in a row .* not sent to the upstream; the identical call will be sent again in 2 s/,
    )
    expect(again.error?.hint).not.toMatch(/try again/i)
    expect(reasons(events)).toEqual(['max_attempts', 'exhausted_in_run'])
  })

  it('gets one request once the cooldown is over (a probe), whose failure doubles the cooldown; a success forgets the call', async () => {
    const { world, call, clock } = setup({ script: [false, false, false, false, false, true, false, false, false] })
    await call('o-1', 'c1')
    await clock.advance(1_999)
    await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    await clock.advance(1)
    const probe = await call('o-1', 'c3')
    expect(world.requests).toBe(4)
    expect(probe.error?.hint).toMatch(/failed all 4 attempts .* not be sent again for 4 s/)
    await clock.advance(3_999)
    await call('o-1', 'c4')
    expect(world.requests).toBe(4)
    await clock.advance(1)
    await call('o-1', 'c5')
    expect(world.requests).toBe(5)
    await clock.advance(8_000)
    expect(await call('o-1', 'c6')).toMatchObject({ ok: true, value: 'order o-1' })
    expect(world.requests).toBe(6)
    await call('o-1', 'c7')
    expect(world.requests).toBe(9)
  })

  it('recovers a run of failures the world heals from: reset three times, then the repeat after the cooldown succeeds', async () => {
    const { world, call, clock } = setup({ script: ['network_error', 'network_error', 'network_error', true] })
    expect((await call('o-1', 'c1')).ok).toBe(false)
    await clock.advance(2_000)
    expect(await call('o-1', 'c2')).toMatchObject({ ok: true, value: 'order o-1' })
    expect(world.requests).toBe(4)
  })

  it('sends the repeat at once after requests that took long to fail: the cooldown runs from when the last one was sent', async () => {
    const { world, call } = setup({ script: [false, false, false, true], latencyMs: 30_000 })
    expect((await call('o-1', 'c1')).error?.hint).toMatch(/will be sent once more, without retries/)
    expect(await call('o-1', 'c2')).toMatchObject({ ok: true })
    expect(world.requests).toBe(4)
  })

  it('waits out the service’s Retry-After before its one request, when retry would wait that long for one', async () => {
    const { world, call, clock, events } = setup({ script: [5000, 5000, 5000, true] })
    const first = await call('o-1', 'c1')
    expect(first.error?.hint).toMatch(/the service asked to wait, so the identical call will wait 5 s and be sent once more/)
    const endedAt = clock.now()
    expect(await call('o-1', 'c2')).toMatchObject({ ok: true })
    expect(world.requests).toBe(4)
    expect(clock.now() - endedAt).toBe(5_000)
    expect(events.at(-1)).toMatchObject({ type: 'retry.scheduled', delayMs: 5_000, probe: true })
  })

  it('cancels that wait with the run, sending nothing', async () => {
    const { world, call, clock } = setup({ script: [5000, 5000, 5000, true] })
    await call('o-1', 'c1')
    const controller = new AbortController()
    void clock.sleep(1_000).then(() => controller.abort(new Error('user hit stop')))
    await expect(call('o-1', 'c2', controller.signal)).rejects.toMatchObject({ kind: 'cancelled' })
    expect(world.requests).toBe(3)
  })

  it('answers instead of waiting when the Retry-After is longer than retry waits for one (its capMs)', async () => {
    const { world, call } = setup({ script: [100, 100, 9000, true] })
    await call('o-1', 'c1')
    const again = await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    expect(again.error?.hint).toMatch(/not sent to the upstream; the identical call will be sent again in 9 s/)
  })

  it('sends the repeat at once, without retries, when the attempts failed in different ways (not a dead upstream)', async () => {
    const { world, call } = setup({ script: [false, 'network_error', false, true] })
    expect((await call('o-1', 'c1')).ok).toBe(false)
    expect(world.requests).toBe(3)
    expect(await call('o-1', 'c2')).toMatchObject({ ok: true, value: 'order o-1' })
    expect(world.requests).toBe(4)
  })

  it('always sends a keyed write’s repeat (same key) when its outcome is open, and never invites new arguments', async () => {
    const timedOut = 'timeout'
    const { world, call } = setup({ script: [timedOut, timedOut, timedOut, true], effect: 'idempotent' })
    const first = await call('o-1', 'c1')
    expect(first.error?.hint).toMatch(/may have taken effect\. Repeating this identical call is safe: it carries the same idempotency key/)
    expect(first.error?.hint).toMatch(/Do not change the arguments/)
    expect(world.requests).toBe(2)
    const second = await call('o-1', 'c2')
    expect(world.requests).toBe(3)
    expect(second.error?.hint).toMatch(/Repeating this identical call is safe/)
    expect(await call('o-1', 'c3')).toMatchObject({ ok: true })
    expect(world.requests).toBe(4)
  })

  it('never invites new arguments for a write, even one every attempt of which was refused at the door', async () => {
    const { call } = setup({ script: [100, 100, 100], effect: 'write' })
    const first = await call('o-1', 'c1')
    expect(first.error?.hint).toMatch(/do not change the arguments/)
    expect(first.error?.hint).not.toMatch(/, change the arguments/)
  })

  it('still retries a different call, and a 503 that recovers on the 2nd attempt still succeeds', async () => {
    const { world, call } = setup({ script: [false, false, false, false, true] })
    await call('o-1', 'c1')
    expect(await call('o-2', 'c2')).toMatchObject({ ok: true, value: 'order o-2' })
    expect(world.requests).toBe(5)
  })

  it('keeps the memory in run state as plain JSON, and reads planted values as nothing remembered', async () => {
    const { call, run } = setup()
    await call('o-1', 'c1')
    expect(JSON.parse(JSON.stringify(run.state))).toEqual(run.state)
    const fingerprint = (run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string }>)[0]?.fingerprint
    const error = { code: 'upstream_error', category: 'transient', message: 'm' }
    for (const planted of [
      { __proto__: null, x: 1 },
      'o-1',
      [1, null, {}],
      JSON.parse('{"__proto__":["x"]}'),
      [{ fingerprint, sentAt: Number.NaN, error }],
      [{ fingerprint, sentAt: Number.POSITIVE_INFINITY, error }],
      [{ fingerprint: 7, sentAt: 0, error }],
      JSON.parse(`[{"__proto__":{"fingerprint":"${fingerprint}","sentAt":0}}]`),
    ]) {
      const fresh = setup({ state: { 'shallot.retry.exhausted': planted } })
      await fresh.call('o-1', 'c1')
      expect(fresh.world.requests).toBe(3)
    }
  })

  it('reads a hostile count or Retry-After as the safe side: the cooldown stays within its bounds', async () => {
    const probe = setup()
    await probe.call('o-1', 'c1')
    const fingerprint = (probe.run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string }>)[0]?.fingerprint as string
    const error = { code: 'upstream_error', category: 'transient', message: 'm' }
    for (const [failures, retryAfterMs] of [
      [Number.NaN, Number.NaN],
      [-5, -1],
      [1e308, Number.POSITIVE_INFINITY],
      ['3', '9000'],
    ]) {
      const fresh = setup({
        state: { 'shallot.retry.exhausted': [{ fingerprint, sentAt: 0, failures, error: { ...error, retryAfterMs } }] },
      })
      const answered = await fresh.call('o-1', 'c1')
      expect(fresh.world.requests).toBe(0)
      expect(answered.error?.hint).toMatch(/sent again in (2|600) s/)
    }
  })

  it('sends a request for a remembered call whose error is malformed or missing (a run checkpointed by an older release)', async () => {
    const probe = setup()
    await probe.call('o-1', 'c1')
    const fingerprint = (probe.run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string }>)[0]?.fingerprint as string
    for (const error of [
      undefined,
      { code: 'Not Snake', category: 'transient', message: 'm' },
      { code: 'x', category: 'bogus', message: 'm' },
    ]) {
      for (const planted of [[fingerprint], [{ fingerprint, at: 0, error }]]) {
        const fresh = setup({ state: { 'shallot.retry.exhausted': planted } })
        const result = await fresh.call('o-1', 'c1')
        expect(result.error?.code).toBe('upstream_error')
        expect(fresh.world.requests).toBe(1)
      }
    }
  })

  it('reads an entry of an older release (`at`, no count) as three failed requests', async () => {
    const probe = setup()
    await probe.call('o-1', 'c1')
    const [entry] = probe.run.state['shallot.retry.exhausted'] as Array<{ fingerprint: string; error: unknown }>
    const legacy = [{ fingerprint: entry?.fingerprint, at: 0, error: entry?.error }]
    const fresh = setup({ state: { 'shallot.retry.exhausted': legacy } })
    expect((await fresh.call('o-1', 'c1')).error?.hint).toMatch(/failed 3 requests in a row/)
    expect(fresh.world.requests).toBe(0)
  })

  it('a clock that went back (a resumed run on another machine) sends the repeat rather than trust the memory', async () => {
    const { world, call, run, clock } = setup()
    await call('o-1', 'c1')
    const [entry] = run.state['shallot.retry.exhausted'] as Array<{ sentAt: number }>
    ;(entry as { sentAt: number }).sentAt = clock.now() + 5_000
    await call('o-1', 'c2')
    expect(world.requests).toBe(4)
  })

  it('handles parallel identical calls: each runs its own retries, the next ones after them are answered from the failure', async () => {
    const { world, call } = setup()
    await Promise.all([call('o-1', 'c1'), call('o-1', 'c2')])
    expect(world.requests).toBe(6)
    const [third, fourth] = await Promise.all([call('o-1', 'c3'), call('o-1', 'c4')])
    expect(world.requests).toBe(6)
    expect([third.error?.code, fourth.error?.code]).toEqual(['upstream_error', 'upstream_error'])
  })
})
