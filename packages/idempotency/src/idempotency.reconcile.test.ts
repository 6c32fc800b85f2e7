import { createAgent } from '@shallot/agent'
import {
  createRun,
  createStack,
  defineTool,
  LoopError,
  type Middleware,
  type ReconcileAnswer,
  ToolError,
  type ToolExecuteContext,
} from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type IdempotencyStore, idempotency, memoryIdempotencyStore } from './index.js'

type Reconciler = (n: number, context: ToolExecuteContext) => ReconcileAnswer | Promise<ReconcileAnswer>

/** A charge_card write that fails as the test says, with a reconciler the test scripts; counts both. */
function chargeTool(behave: (n: number) => unknown, reconcile?: Reconciler) {
  const seen = { runs: 0, asked: 0, keys: [] as Array<string | undefined>, signals: [] as AbortSignal[] }
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ card: z.string(), amount: z.number() }),
    execute: async (_args, { idempotencyKey }) => {
      seen.keys.push(idempotencyKey)
      return behave(++seen.runs)
    },
    ...(reconcile === undefined
      ? {}
      : {
          reconcile: (_args: unknown, context: ToolExecuteContext) => {
            seen.signals.push(context.signal)
            seen.keys.push(context.idempotencyKey)
            return reconcile(++seen.asked, context)
          },
        }),
  })
  return { tool, seen }
}

const timedOut = () => {
  throw new ToolError('timeout', 'charge_card timed out after 5000 ms')
}
const charge = (id = 'c') => ({ id, name: 'charge_card', args: { card: 'c1', amount: 5 } })
const types = (trace: ReadonlyArray<{ type: string }>) => trace.map((e) => e.type).filter((t) => t.startsWith('idempotency.'))

/** Dispatches and runs the manual clock until the call settles. */
async function settled<T>(clock: ReturnType<typeof manualClock>, pending: Promise<T>): Promise<T> {
  let done = false
  void pending.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  for (let i = 0; i < 100 && !done; i++) await clock.advance(1000)
  return pending
}

function setup(reconcile: Reconciler | undefined, behave: (n: number) => unknown = timedOut, store?: IdempotencyStore) {
  const clock = manualClock()
  const { tool, seen } = chargeTool(behave, reconcile)
  const layer = idempotency({ store: store ?? memoryIdempotencyStore({ now: clock.now }), reconcileDelayMs: 100, reconcileTimeoutMs: 1000 })
  const stack = createStack({ clock, tools: [tool], middleware: [layer] })
  const run = createRun({ id: 'run-1' })
  const dispatch = (id = 'c') => settled(clock, stack.dispatch(charge(id), { run }))
  return { clock, stack, seen, dispatch, run }
}

describe('idempotency: a write whose outcome is unknown is reconciled', () => {
  it('completes the call with the result the reconciler found when the write landed, and replays it after', async () => {
    const { seen, dispatch } = setup(() => ({ status: 'applied', result: { chargeId: 'ch_1' } }))
    const first = await dispatch()
    expect(first).toMatchObject({ ok: true, value: { chargeId: 'ch_1' } })
    expect(types(first.trace)).toEqual(['idempotency.reconcile_attempt', 'idempotency.reconciled', 'idempotency.stored'])
    expect(first.trace.find((e) => e.type === 'idempotency.reconciled')).toMatchObject({ outcome: 'applied', attempts: 1 })
    const again = await dispatch('c2')
    expect(again).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1' } })
    expect(seen).toMatchObject({ runs: 1, asked: 1 })
    expect(new Set(seen.keys).size).toBe(1) // the reconciler is asked with the key execute got
  })

  it('releases the record when the write did not land: the error says repeating is safe, and the repeat runs', async () => {
    const { seen, dispatch } = setup(
      () => ({ status: 'not_applied' }),
      (n) => {
        if (n === 1) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
        return { chargeId: 'ch_2' }
      },
    )
    const first = await dispatch()
    expect(first.error).toMatchObject({ code: 'upstream_error', safeToRepeat: true })
    expect(first.error?.hint).toBe('checked: it did not take effect, so repeating the identical call is safe')
    expect(types(first.trace)).toEqual(['idempotency.reconcile_attempt', 'idempotency.reconciled', 'idempotency.released'])
    expect(await dispatch('c2')).toMatchObject({ ok: true, replayed: false, value: { chargeId: 'ch_2' } })
    expect(seen).toMatchObject({ runs: 2, asked: 1 })
  })

  it('asks again with backoff while the answer is unknown, then says what was tried; the next identical call asks again', async () => {
    const { seen, dispatch, clock } = setup(() => ({ status: 'unknown' }))
    const started = clock.now()
    const first = await dispatch()
    expect(first.error).toMatchObject({ code: 'timeout', safeToRepeat: false, retryable: false })
    expect(first.error?.hint).toContain('checked 3 times whether it took effect and could not tell')
    expect(types(first.trace)).toEqual([
      'idempotency.reconcile_attempt',
      'idempotency.reconcile_attempt',
      'idempotency.reconcile_attempt',
      'idempotency.reconciled',
      'idempotency.outcome_unknown',
    ])
    expect(clock.now() - started).toBeGreaterThanOrEqual(300) // 100 ms, then 200 ms between the questions
    const again = await dispatch('c2')
    expect(again.error).toMatchObject({ code: 'outcome_unknown', safeToRepeat: false })
    expect(again.content).toContain('checking 3 times could not tell whether it did')
    expect(again.content).not.toMatch(/try again|repeat/i)
    expect(seen).toMatchObject({ runs: 1, asked: 6 })
  })

  it('a later identical call learns from the reconciler that the write landed, and the tool never runs twice', async () => {
    let landed = false
    const { seen, dispatch } = setup(() => (landed ? { status: 'applied', result: { chargeId: 'ch_1' } } : { status: 'unknown' }))
    expect((await dispatch()).error?.code).toBe('timeout')
    landed = true
    const later = await dispatch('c2')
    expect(later).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1' } })
    expect(types(later.trace)).toEqual([
      'idempotency.reclaimed',
      'idempotency.reconcile_attempt',
      'idempotency.reconciled',
      'idempotency.stored',
    ])
    expect((await dispatch('c3')).trace.map((e) => e.type)).toEqual(['idempotency.replayed'])
    expect(seen).toMatchObject({ runs: 1, asked: 4 })
  })

  it('tells the reconciler when the call was sent (wall clock); a later call asking about an earlier one is not told', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2026, 4, 1, 12) })
    try {
      const heard: Array<number | undefined> = []
      const { dispatch } = setup(
        (_n, context) => {
          heard.push(context.sentAt)
          return { status: 'unknown' }
        },
        () => {
          // The write takes 5 s on the wall clock before it times out.
          vi.setSystemTime(Date.now() + 5000)
          timedOut()
        },
      )
      const sent = Date.now()
      await dispatch()
      await dispatch('c2')
      expect(heard).toEqual([sent, sent, sent, undefined, undefined, undefined])
    } finally {
      vi.useRealTimers()
    }
  })

  it('a later identical call runs the tool when the reconciler finds the earlier one did not land', async () => {
    let answer: ReconcileAnswer = { status: 'unknown' }
    const { seen, dispatch } = setup(
      () => answer,
      (n) => (n === 1 ? timedOut() : { chargeId: 'ch_2' }),
    )
    await dispatch()
    answer = { status: 'not_applied' }
    expect(await dispatch('c2')).toMatchObject({ ok: true, replayed: false, value: { chargeId: 'ch_2' } })
    expect(seen.runs).toBe(2)
  })

  it('50 identical parallel calls after an unknown outcome: one reconciliation, one result for all', async () => {
    let landed = false
    const { seen, dispatch } = setup(() => (landed ? { status: 'applied', result: { chargeId: 'ch_1' } } : { status: 'unknown' }))
    await dispatch()
    landed = true
    const asked = seen.asked
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => dispatch(`p${i}`)))
    expect(seen.asked - asked).toBe(1)
    expect(results.every((r) => r.ok && (r.value as { chargeId: string }).chargeId === 'ch_1')).toBe(true)
    expect(seen.runs).toBe(1)
  })
})

describe('idempotency: a reconciler that misbehaves counts as unknown', () => {
  const lies: Array<[string, Reconciler]> = [
    ['throws', () => Promise.reject(new Error('lookup API down'))],
    [
      'throws synchronously',
      () => {
        throw new Error('boom')
      },
    ],
    ['answers applied without a result', () => ({ status: 'applied' }) as never],
    ['answers applied with an undefined result', () => ({ status: 'applied', result: undefined })],
    ['answers a status nobody defined', () => ({ status: 'done' }) as never],
    ['answers null', () => null as never],
    ['answers a string', () => 'applied' as never],
    [
      'answers with a throwing getter',
      () =>
        ({
          get status(): never {
            throw new Error('getter')
          },
        }) as never,
    ],
    [
      'answers a revoked Proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable({ status: 'applied', result: 1 }, {})
        revoke()
        return proxy as never
      },
    ],
    [
      'answers a thenable whose then throws',
      () =>
        ({
          // biome-ignore lint/suspicious/noThenProperty: a hostile answer that poses as a promise
          get then(): never {
            throw new Error('then')
          },
        }) as never,
    ],
  ]
  for (const [name, reconcile] of lies) {
    it(`${name}: the call keeps its error, the record stays unknown, the tool never runs again`, async () => {
      const { seen, dispatch } = setup(reconcile)
      const first = await dispatch()
      expect(first.error?.code).toBe('timeout')
      expect(first.trace.find((e) => e.type === 'idempotency.reconciled')).toMatchObject({ outcome: 'unknown', attempts: 3 })
      expect((await dispatch('c2')).error?.code).toBe('outcome_unknown')
      expect(seen.runs).toBe(1)
    })
  }

  it('hangs: each question is bounded by reconcileTimeoutMs on the stack clock, and its signal aborts', async () => {
    const { seen, dispatch, clock } = setup(() => new Promise<never>(() => {}))
    const started = clock.now()
    const first = await dispatch()
    expect(first.error?.code).toBe('timeout')
    expect(first.trace.filter((e) => e.type === 'idempotency.reconcile_attempt').map((e) => e.answer)).toEqual([
      'timed_out',
      'timed_out',
      'timed_out',
    ])
    expect(clock.now() - started).toBeLessThanOrEqual(4000)
    expect(seen.signals.every((s) => s.aborted)).toBe(true)
    expect(clock.pending).toBe(0)
  })

  it('hangs and the run is cancelled: the cancellation ends the call at once and the record stays unknown', async () => {
    const clock = manualClock()
    const { tool, seen } = chargeTool(timedOut, () => new Promise<never>(() => {}))
    const stack = createStack({ clock, tools: [tool], middleware: [idempotency({ store: memoryIdempotencyStore({ now: clock.now }) })] })
    const controller = new AbortController()
    const pending = stack.dispatch(charge(), { signal: controller.signal })
    await clock.advance(10)
    const cancelled = new LoopError('cancelled', 'the user pressed Ctrl-C')
    controller.abort(cancelled)
    await expect(pending).rejects.toBe(cancelled)
    expect(seen.signals[0]?.aborted).toBe(true)
    expect(clock.pending).toBe(0)
    const later = await settled(clock, stack.dispatch(charge('c2')))
    expect(later.error?.code).toBe('outcome_unknown')
    expect(seen.runs).toBe(1)
    expect(clock.pending).toBe(0)
  })

  it('spends one step of the run per question and stops the run when the budget is gone, leaving the outcome unknown', async () => {
    const clock = manualClock()
    const { tool, seen } = chargeTool(timedOut, () => ({ status: 'unknown' }))
    const stack = createStack({ clock, tools: [tool], middleware: [idempotency({ store: memoryIdempotencyStore({ now: clock.now }) })] })
    const run = createRun({ id: 'run-1', maxSteps: 2 })
    await expect(settled(clock, stack.dispatch(charge(), { run }))).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'budget_exhausted',
    )
    expect(seen).toMatchObject({ runs: 1, asked: 1 })
    const later = await settled(clock, stack.dispatch(charge('c2'), { run: createRun({ id: 'run-1' }) }))
    expect(later.error?.code).toBe('outcome_unknown')
    expect(seen).toMatchObject({ runs: 1, asked: 4 })
  })
})

describe('idempotency: reconciliation across processes', () => {
  /** The same records under another object identity: a second process sharing one database. */
  const otherProcess = (store: IdempotencyStore): IdempotencyStore => ({
    begin: (...a) => store.begin(...a),
    complete: (...a) => store.complete(...a),
    release: (...a) => store.release(...a),
    markUnknown: (...a) => store.markUnknown(...a),
    ...(store.reclaim === undefined
      ? {}
      : { reclaim: (...a: Parameters<NonNullable<IdempotencyStore['reclaim']>>) => store.reclaim?.(...a) }),
  })

  it('a crash between the unknown outcome and its reconciliation: the next process’s identical call reconciles', async () => {
    const clock = manualClock()
    const shared = memoryIdempotencyStore({ now: clock.now })
    let charged = false
    const crashed = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ card: z.string(), amount: z.number() }),
      execute: () => {
        charged = true
        return new Promise<never>(() => {}) // the process dies with the charge sent
      },
    })
    const first = createStack({ clock, tools: [crashed], middleware: [idempotency({ store: shared, leaseMs: 60_000 })] })
    void first.dispatch(charge(), { run: createRun({ id: 'run-1' }) })
    await clock.advance(1)
    expect(charged).toBe(true)
    await clock.advance(60_000)
    const { tool, seen } = chargeTool(timedOut, () => ({ status: 'applied', result: { chargeId: 'ch_1' } }))
    const second = createStack({ clock, tools: [tool], middleware: [idempotency({ store: otherProcess(shared), leaseMs: 60_000 })] })
    const resumed = await settled(clock, second.dispatch(charge('c2'), { run: createRun({ id: 'run-1' }) }))
    expect(resumed).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1' } })
    expect(types(resumed.trace)[0]).toBe('idempotency.reclaimed')
    expect(seen).toMatchObject({ runs: 0, asked: 1 })
  })

  it('a store without reclaim keeps refusing the later identical call, as before', async () => {
    const clock = manualClock()
    const inner = memoryIdempotencyStore({ now: clock.now })
    const store: IdempotencyStore = {
      begin: (...a) => inner.begin(...a),
      complete: (...a) => inner.complete(...a),
      release: (...a) => inner.release(...a),
      markUnknown: (...a) => inner.markUnknown(...a),
    }
    let landed = false
    const { seen, dispatch } = setup(() => (landed ? { status: 'applied', result: 1 } : { status: 'unknown' }), timedOut, store)
    await dispatch()
    landed = true
    const again = await dispatch('c2')
    expect(again.error?.code).toBe('outcome_unknown')
    expect(again.error?.hint).toBe(
      'find out whether it took effect with a tool that looks it up (e.g. find the order) and continue from what you find; if you have no such tool, ask the user',
    )
    expect(seen.asked).toBe(3)
  })
})

describe('idempotency: reconciliation in an agent run', () => {
  it('the model reads the reconciled success, not the timeout, and the run completes', async () => {
    const clock = manualClock()
    const { tool, seen } = chargeTool(timedOut, () => ({ status: 'applied', result: { chargeId: 'ch_1' } }))
    const slow: Middleware = async (_ctx, next) => {
      await clock.sleep(10)
      await next()
    }
    const agent = createAgent({
      clock,
      model: scriptedModel([
        { toolCalls: [{ name: 'charge_card', args: { card: 'c1', amount: 5 } }] },
        ({ lastResults }) => ({ text: lastResults[0]?.content ?? '' }),
      ]),
      tools: [tool],
      middleware: [idempotency({ store: memoryIdempotencyStore({ now: clock.now }) }), slow],
    })
    const outcome = await settled(clock, agent.run({ input: 'charge 5' }))
    expect(outcome).toMatchObject({ status: 'completed', output: '{"chargeId":"ch_1"}' })
    expect(seen).toMatchObject({ runs: 1, asked: 1 })
  })
})
