import { createRun, createStack, defineTool, OptionsError, type StackEvent, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerState, type BreakerStore, circuitBreaker, circuitBreakerDefinition, consecutive, memoryBreakerStore } from './index.js'
import { RUN_STATE_KEY } from './run-state-store.js'

const timedOut = () => new ToolError('timeout', "Tool 'status_page' timed out after 5s")
const call = (id: string) => ({ id, name: 'status_page', args: { region: 'eu' } })

/** A tool whose invocations wait for the test to answer them, oldest first. */
function heldTool() {
  const pending: Array<{ resolve: (v: string) => void; reject: (e: unknown) => void }> = []
  let calls = 0
  const tool = defineTool({
    name: 'status_page',
    description: 'Read the status page',
    input: z.object({ region: z.string() }),
    effect: 'read',
    execute: (_args, { signal }) => {
      calls++
      return new Promise<string>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        pending.push({ resolve, reject })
      })
    },
  })
  return {
    tool,
    pending,
    get calls() {
      return calls
    },
  }
}

/** A stack whose breaker opens on the first timeout and half-opens 1 s later. */
async function openedStack(options: Parameters<typeof circuitBreaker>[0] = {}, store?: BreakerStore) {
  const clock = manualClock()
  const held = heldTool()
  const breaker = circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, ...options, ...(store ? { store } : {}) })
  const stack = createStack({ middleware: [breaker], tools: [held.tool], clock })
  const events: string[] = []
  stack.on((e: StackEvent) => {
    if (e.type === 'circuit-breaker.state') events.push(`${e.from}->${e.to}: ${e.reason}`)
    if (e.type === 'circuit-breaker.probe_succeeded') events.push(`probe ${e.probe} ok: ${e.successes} of ${e.needed}`)
  })
  const first = stack.dispatch(call('trip'))
  await clock.advance(0)
  held.pending.shift()?.reject(timedOut())
  expect((await first).error?.code).toBe('timeout')
  await clock.advance(1000)
  return { clock, held, stack, events }
}

/** Starts `n` calls and lets them reach the tool (or be refused). */
async function start(stack: ReturnType<typeof createStack>, clock: ReturnType<typeof manualClock>, ids: string[]) {
  const results = ids.map((id) => stack.dispatch(call(id)))
  await clock.advance(0)
  return results
}

describe('half-open sampling: halfOpenSuccesses of halfOpenProbes', () => {
  it('closes on exactly the third success of three, not before, and lets no fourth probe in meanwhile', async () => {
    const { clock, held, stack, events } = await openedStack({ halfOpenProbes: 3, halfOpenSuccesses: 3 })
    const probes = await start(stack, clock, ['p1', 'p2', 'p3', 'p4'])
    expect(held.calls).toBe(4) // the trip, then three probes; the fourth was refused
    expect((await probes[3])?.error).toMatchObject({ code: 'circuit_open', retryAfterMs: 60_000 })

    held.pending.shift()?.resolve('up')
    held.pending.shift()?.resolve('up')
    expect((await probes[0])?.ok).toBe(true)
    expect((await probes[1])?.ok).toBe(true)
    // Two successes hold their places: the trial is still three probes, one of them running.
    const refused = await stack.dispatch(call('p5'))
    expect(refused.error).toMatchObject({ code: 'circuit_open', retryAfterMs: 60_000 })
    expect(held.calls).toBe(4)

    held.pending.shift()?.resolve('up')
    expect((await probes[2])?.ok).toBe(true)
    expect(events).toEqual([
      'closed->open: 1 consecutive failures',
      'open->half-open: cooldown of 1000 ms elapsed',
      'probe 1 ok: 1 of 3',
      'probe 2 ok: 2 of 3',
      'half-open->closed: 3 probes succeeded',
    ])
    const after = await start(stack, clock, ['c1', 'c2'])
    expect(held.calls).toBe(6)
    for (const p of held.pending.splice(0)) p.resolve('up')
    expect((await Promise.all(after)).every((r) => r.ok)).toBe(true)
  })

  it('reopens on the first failed probe, even after successes, and the next trial starts from none', async () => {
    const { clock, held, stack, events } = await openedStack({ halfOpenProbes: 3, halfOpenSuccesses: 2 })
    const [ok, bad, late] = await start(stack, clock, ['p1', 'p2', 'p3'])
    held.pending.shift()?.resolve('up')
    expect((await ok)?.ok).toBe(true)
    held.pending.shift()?.reject(timedOut())
    expect((await bad)?.error?.code).toBe('timeout')
    // The third probe's success comes from the trial that failed: it decides nothing.
    held.pending.shift()?.resolve('up')
    expect((await late)?.ok).toBe(true)
    expect((await stack.dispatch(call('refused'))).error).toMatchObject({ code: 'circuit_open', retryAfterMs: 1000 })

    await clock.advance(1000)
    const [a, b] = await start(stack, clock, ['q1', 'q2'])
    held.pending.shift()?.resolve('up')
    await a
    expect(events.slice(-2)).toEqual(['open->half-open: cooldown of 1000 ms elapsed', 'probe 4 ok: 1 of 2'])
    held.pending.shift()?.resolve('up')
    await b
    expect(events.at(-1)).toBe('half-open->closed: 2 probes succeeded')
    expect(events.filter((e) => e.startsWith('half-open->open'))).toEqual(['half-open->open: probe failed'])
  })

  it('gives the place of a probe that ended without a verdict (cancelled) to the next call', async () => {
    const { clock, held, stack } = await openedStack({ halfOpenProbes: 2, halfOpenSuccesses: 2 })
    const controller = new AbortController()
    const cancelled = stack.dispatch(call('p1'), { signal: controller.signal })
    const [kept] = await start(stack, clock, ['p2'])
    expect(held.calls).toBe(3)
    controller.abort()
    await expect(cancelled).rejects.toMatchObject({ kind: 'cancelled' })
    const [third] = await start(stack, clock, ['p3'])
    expect(held.calls).toBe(4)
    held.pending.splice(0, 1) // the cancelled call's, already rejected by its signal
    held.pending.shift()?.resolve('up')
    held.pending.shift()?.resolve('up')
    expect([(await kept)?.ok, (await third)?.ok]).toEqual([true, true])
    const [closed] = await start(stack, clock, ['closed'])
    expect(held.calls).toBe(5) // reached the tool: the circuit closed
    held.pending.shift()?.resolve('up')
    expect((await closed)?.ok).toBe(true)
  })

  it('keeps the trial in a run-scoped breaker’s checkpointed state', async () => {
    const clock = manualClock()
    const held = heldTool()
    const breaker = circuitBreaker({
      lifetime: 'run',
      policy: consecutive({ threshold: 1 }),
      cooldownMs: 1000,
      halfOpenProbes: 2,
      halfOpenSuccesses: 2,
    })
    const stack = createStack({ middleware: [breaker], tools: [held.tool], clock })
    const run = createRun()
    const trip = stack.dispatch(call('trip'), { run })
    await clock.advance(0)
    held.pending.shift()?.reject(timedOut())
    await trip
    await clock.advance(1000)
    const probe = stack.dispatch(call('p1'), { run })
    await clock.advance(0)
    held.pending.shift()?.resolve('up')
    await probe
    const checkpoint = JSON.parse(JSON.stringify(run.state)) as Record<string, Record<string, BreakerState>>
    expect(checkpoint[RUN_STATE_KEY]?.status_page).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })

    const resumed = createRun({ state: checkpoint })
    const next = stack.dispatch(call('p2'), { run: resumed })
    await clock.advance(0)
    held.pending.shift()?.resolve('up')
    await next
    expect((resumed.state[RUN_STATE_KEY] as Record<string, BreakerState>).status_page?.circuit).toBe('closed')
  })
})

describe('half-open sampling with a shared store', () => {
  /** Keeps only the fields a state has, as JSON, the way a server-side store validates and strips what it reads. */
  function jsonStore(): BreakerStore & { raw: Map<string, string> } {
    const raw = new Map<string, string>()
    const fields = ['circuit', 'generation', 'counts', 'failures', 'openedAt', 'openMs', 'opens', 'probes', 'seq'] as const
    const read = (key: string): BreakerState | undefined => {
      const text = raw.get(key)
      if (text === undefined) return undefined
      const parsed = JSON.parse(text) as Record<string, unknown>
      return Object.fromEntries(fields.map((f) => [f, parsed[f]])) as BreakerState
    }
    return {
      raw,
      get: async (key) => read(key),
      update: async (key, change) => {
        const next = change(read(key))
        raw.set(key, JSON.stringify(next))
        return next
      },
    }
  }

  it('counts successes of probes from two workers towards one trial', async () => {
    const store = jsonStore()
    const { clock, held, stack } = await openedStack({ halfOpenProbes: 2, halfOpenSuccesses: 2 }, store)
    const other = heldTool()
    const worker2 = createStack({
      middleware: [
        circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, halfOpenProbes: 2, halfOpenSuccesses: 2, store }),
      ],
      tools: [other.tool],
      clock,
    })
    const [mine] = await start(stack, clock, ['p1'])
    const [theirs, refused] = await start(worker2, clock, ['w1', 'w2'])
    expect((await refused)?.error?.code).toBe('circuit_open')
    held.pending.shift()?.resolve('up')
    await mine
    expect(JSON.parse(store.raw.get('status_page') as string)).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })
    other.pending.shift()?.resolve('up')
    await theirs
    expect((await store.get('status_page'))?.circuit).toBe('closed')
  })

  it('reads a half-open state written before halfOpenSuccesses existed as a trial with no success yet', async () => {
    const store = memoryBreakerStore()
    const old: BreakerState = {
      circuit: 'half-open',
      generation: 1,
      counts: { failures: 0 },
      failures: 5,
      openedAt: 0,
      openMs: 1000,
      opens: 1,
      probes: [],
      seq: 0,
    }
    store.set('status_page', old)
    const clock = manualClock()
    await clock.advance(5000)
    const held = heldTool()
    const breaker = circuitBreaker({ store, halfOpenProbes: 2, halfOpenSuccesses: 2 })
    const stack = createStack({ middleware: [breaker], tools: [held.tool], clock })
    const [p1] = await start(stack, clock, ['p1'])
    held.pending.shift()?.resolve('up')
    await p1
    expect(store.peek('status_page')).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })
  })

  it('never closes on a corrupt tally: it counts as no success', async () => {
    const store = memoryBreakerStore()
    const clock = manualClock()
    const held = heldTool()
    const stack = createStack({
      middleware: [circuitBreaker({ store, halfOpenProbes: 3, halfOpenSuccesses: 2 })],
      tools: [held.tool],
      clock,
    })
    for (const counts of [{ probeSuccesses: -1 }, { probeSuccesses: Number.NaN }, { probeSuccesses: '9' }, { probeSuccesses: 1.5 }, null]) {
      store.set('status_page', {
        circuit: 'half-open',
        generation: 1,
        counts: counts as never,
        failures: 1,
        openedAt: 0,
        openMs: 1000,
        opens: 1,
        probes: [],
        seq: 0,
      })
      const [p] = await start(stack, clock, ['p'])
      held.pending.shift()?.resolve('up')
      expect((await p)?.ok).toBe(true)
      expect(store.peek('status_page')).toMatchObject({ circuit: 'half-open', counts: { probeSuccesses: 1 } })
    }
  })

  it('closes on the next success when the tally is past this worker’s threshold (a worker configured for more)', async () => {
    const store = memoryBreakerStore()
    store.set('status_page', {
      circuit: 'half-open',
      generation: 1,
      counts: { probeSuccesses: 7 },
      failures: 1,
      openedAt: 0,
      openMs: 1000,
      opens: 1,
      probes: [],
      seq: 0,
    })
    const clock = manualClock()
    const held = heldTool()
    const stack = createStack({
      middleware: [circuitBreaker({ store, halfOpenProbes: 3, halfOpenSuccesses: 3 })],
      tools: [held.tool],
      clock,
    })
    const [p] = await start(stack, clock, ['p'])
    held.pending.shift()?.resolve('up')
    await p
    expect(store.peek('status_page')?.circuit).toBe('closed')
  })
})

describe('halfOpenSuccesses options', () => {
  it('refuses a threshold the trial could never reach, naming the option and the fix', () => {
    expect(() => circuitBreaker({ halfOpenSuccesses: 3 })).toThrow(
      /halfOpenSuccesses: must be at most halfOpenProbes \(1\).*raise halfOpenProbes to at least 3/,
    )
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2']) {
      expect(() => circuitBreaker({ halfOpenProbes: 5, halfOpenSuccesses: bad as never })).toThrow(OptionsError)
    }
    expect(() => circuitBreakerDefinition.build({ halfOpenProbes: 2, halfOpenSuccesses: 3 })).toThrow(/halfOpenSuccesses/)
    expect(() => circuitBreakerDefinition.build({ halfOpenProbes: 4, halfOpenSuccesses: 3 })).not.toThrow()
  })
})
