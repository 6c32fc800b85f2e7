import { getEventListeners } from 'node:events'
import {
  createRun,
  createStack,
  defineTool,
  LoopError,
  type Middleware,
  OptionsError,
  type StackEvent,
  type ToolEffect,
  ToolError,
} from '@shallot/core'
import { memoryRetryBudget } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type HedgingOptions, hedging } from './index.js'

interface Plan {
  /** Virtual ms each execution takes, by execution number (1-based); the last entry repeats. */
  ms: number[]
  /** Executions that fail (1-based). */
  fail?: number[]
  /** Executions that ignore their signal. */
  deaf?: boolean
  /** Executions that never settle (1-based). */
  hang?: number[]
}

function setup(options: HedgingOptions, plan: Plan, { effect = 'read' as ToolEffect, outer = [] as Middleware[], maxSteps = 100 } = {}) {
  const clock = manualClock()
  const signals: AbortSignal[] = []
  let executions = 0
  const tool = defineTool({
    name: 'search',
    description: 'a search whose attempts take the planned time',
    input: z.object({ q: z.string() }),
    effect,
    execute: async ({ q }, { signal }) => {
      const n = ++executions
      signals.push(signal)
      if (plan.hang?.includes(n)) return new Promise<string>(() => {})
      const ms = plan.ms[Math.min(n, plan.ms.length) - 1] ?? 0
      await clock.sleep(ms, plan.deaf ? undefined : signal)
      if (plan.fail?.includes(n)) throw new ToolError('upstream_error', `attempt ${n} failed`, { category: 'transient', retryable: true })
      return `${q}: answer of execution ${n}`
    },
  })
  const stack = createStack({ middleware: [...outer, hedging(options)], tools: [tool], clock })
  const events: StackEvent[] = []
  stack.on((event) => {
    // The layers' own events; the stack's call.started / call.finished are asserted in core.
    if (!event.type.startsWith('call.')) events.push(event)
  })
  const controller = new AbortController()
  const run = createRun({ signal: controller.signal, maxSteps })
  const dispatch = () => stack.dispatch({ id: 'c1', name: 'search', args: { q: 'shallots' } }, { run })
  return { clock, signals, events, run, controller, dispatch, executions: () => executions }
}

const types = (events: readonly StackEvent[]) => events.map((e) => e.type)

describe('hedging', () => {
  it('a slow first attempt and a fast second: one success, the loser aborted, the retry budget charged', async () => {
    const retryBudget = memoryRetryBudget({ maxTokens: 100 })
    const { clock, signals, events, run, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [1000, 50] })
    const pending = dispatch()
    await clock.advance(100)
    expect(executions()).toBe(2)
    await clock.advance(50)
    const result = await pending
    expect(result.ok).toBe(true)
    expect(result.value).toBe('shallots: answer of execution 2')
    expect(result.durationMs).toBe(150)
    expect(signals[0]?.aborted).toBe(true)
    expect(signals[0]?.reason).toMatchObject({ code: 'hedge_lost' })
    expect(signals[1]?.aborted).toBe(false)
    expect(await retryBudget.available()).toBe(95)
    expect(run.budget.used).toBe(2)
    expect(types(events)).toEqual(['hedging.started', 'hedging.won'])
    expect(events[1]).toMatchObject({ by: 'hedge', afterMs: 150 })
    expect(clock.pending).toBe(0)
  })

  it('never hedges a write, however slow', async () => {
    const { clock, events, dispatch, executions } = setup({ delayMs: 100 }, { ms: [1000] }, { effect: 'write' })
    const pending = dispatch()
    await clock.advance(1000)
    expect((await pending).value).toBe('shallots: answer of execution 1')
    expect(executions()).toBe(1)
    expect(events).toEqual([])
  })

  it('refuses to be told to hedge writes', () => {
    expect(() => hedging({ effects: ['write'] as never })).toThrow(/effects\[0\].*a write is never hedged/)
  })

  it('starts nothing when the first attempt answers within the delay, and spends no token', async () => {
    const retryBudget = memoryRetryBudget({ maxTokens: 100 })
    const { clock, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [99] })
    const pending = dispatch()
    await clock.advance(99)
    expect((await pending).ok).toBe(true)
    expect(executions()).toBe(1)
    expect(events).toEqual([])
    expect(await retryBudget.available()).toBe(100)
    expect(clock.pending).toBe(0)
  })

  it('the first attempt wins when it answers before the hedge: the hedge is aborted and its late answer ignored', async () => {
    const { clock, signals, events, dispatch } = setup({ delayMs: 100 }, { ms: [150, 500] })
    const pending = dispatch()
    await clock.advance(150)
    const result = await pending
    expect(result.value).toBe('shallots: answer of execution 1')
    expect(signals[1]?.aborted).toBe(true)
    expect(events.at(-1)).toMatchObject({ type: 'hedging.won', by: 'first' })
    expect(clock.pending).toBe(0)
  })

  it('a first attempt that fails while the hedge runs: the hedge answers', async () => {
    const { clock, dispatch } = setup({ delayMs: 100 }, { ms: [200, 300], fail: [1] })
    const pending = dispatch()
    await clock.runAll()
    expect((await pending).value).toBe('shallots: answer of execution 2')
  })

  it('both attempts fail: the model reads the first attempt’s error', async () => {
    const { clock, events, dispatch } = setup({ delayMs: 100 }, { ms: [200, 50], fail: [1, 2] })
    const pending = dispatch()
    await clock.runAll()
    const result = await pending
    expect(result.error?.message).toBe('attempt 1 failed')
    expect(types(events)).toEqual(['hedging.started', 'hedging.failed'])
  })

  it('hedges nothing once the retry budget is empty', async () => {
    const retryBudget = memoryRetryBudget({ maxTokens: 4 })
    const { clock, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [1000] })
    const pending = dispatch()
    await clock.runAll()
    expect((await pending).ok).toBe(true)
    expect(executions()).toBe(1)
    expect(events).toEqual([expect.objectContaining({ type: 'hedging.skipped', reason: 'retry_budget' })])
  })

  it('hedges nothing when the run has no step left for a second attempt', async () => {
    const { clock, events, dispatch, executions } = setup({ delayMs: 100 }, { ms: [1000] }, { maxSteps: 1 })
    const pending = dispatch()
    await clock.runAll()
    expect((await pending).ok).toBe(true)
    expect(executions()).toBe(1)
    expect(events).toEqual([expect.objectContaining({ type: 'hedging.skipped', reason: 'step_budget' })])
  })

  it('a budget store that throws fails closed: no hedge, and the call still answers', async () => {
    const retryBudget = {
      tryTake: () => {
        throw new Error('redis down')
      },
      refill: () => {},
      available: () => 0,
    }
    const { clock, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [1000] })
    const pending = dispatch()
    await clock.runAll()
    expect((await pending).ok).toBe(true)
    expect(executions()).toBe(1)
    expect(events).toEqual([expect.objectContaining({ type: 'hedging.skipped', reason: 'retry_budget' })])
  })

  it('tokens taken by a slow store after the first attempt already answered go back, and no hedge starts', async () => {
    let tokens = 10
    let grant: (() => void) | undefined
    const retryBudget = {
      tryTake: (cost: number) =>
        new Promise<boolean>((resolve) => {
          grant = () => {
            tokens -= cost
            resolve(true)
          }
        }),
      refill: (n: number) => {
        tokens += n
      },
      available: () => tokens,
    }
    const { clock, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [150] })
    const pending = dispatch()
    await clock.advance(150)
    expect((await pending).ok).toBe(true)
    grant?.()
    await clock.runAll()
    expect(executions()).toBe(1)
    expect(tokens).toBe(10)
    expect(events).toEqual([])
  })

  it('a hedge that answers after the first attempt won changes nothing: no event, the first answer stands', async () => {
    const { clock, events, dispatch } = setup({ delayMs: 100 }, { ms: [150, 500], deaf: true })
    const pending = dispatch()
    await clock.advance(150)
    expect((await pending).value).toBe('shallots: answer of execution 1')
    await clock.runAll()
    expect(events).toEqual([
      expect.objectContaining({ type: 'hedging.started' }),
      expect.objectContaining({ type: 'hedging.won', by: 'first' }),
    ])
  })

  it('a hedge that never settles: the first answer still ends the call, and nothing is left behind', async () => {
    const { clock, controller, dispatch } = setup({ delayMs: 100 }, { ms: [300], hang: [2] })
    const pending = dispatch()
    await clock.advance(300)
    expect((await pending).value).toBe('shallots: answer of execution 1')
    expect(clock.pending).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('the first attempt failed and the hedge never settles: a cancel still ends the call', async () => {
    const { clock, controller, dispatch } = setup({ delayMs: 100 }, { ms: [200], fail: [1], hang: [2] })
    const pending = dispatch()
    await clock.advance(200)
    controller.abort(new Error('user pressed stop'))
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(clock.pending).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('a run cancelled while the budget store decides: no hedge starts, and the tokens go back', async () => {
    let tokens = 10
    let grant: (() => void) | undefined
    const retryBudget = {
      tryTake: (cost: number) =>
        new Promise<boolean>((resolve) => {
          grant = () => {
            tokens -= cost
            resolve(true)
          }
        }),
      refill: (n: number) => {
        tokens += n
      },
      available: () => tokens,
    }
    const { clock, controller, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [1000] })
    const pending = dispatch()
    await clock.advance(100)
    controller.abort(new Error('user pressed stop'))
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    grant?.()
    await clock.runAll()
    expect(executions()).toBe(1)
    expect(tokens).toBe(10)
    expect(events).toEqual([])
  })

  it('the run’s last step spent while the budget store decides: no hedge starts, and the tokens go back', async () => {
    let tokens = 10
    let grant: (() => void) | undefined
    const retryBudget = {
      tryTake: (cost: number) =>
        new Promise<boolean>((resolve) => {
          grant = () => {
            tokens -= cost
            resolve(true)
          }
        }),
      refill: (n: number) => {
        tokens += n
      },
      available: () => tokens,
    }
    const { clock, run, events, dispatch, executions } = setup({ delayMs: 100, retryBudget }, { ms: [1000] }, { maxSteps: 2 })
    const pending = dispatch()
    await clock.advance(100)
    run.budget.spend('another call')
    grant?.()
    await clock.runAll()
    expect((await pending).value).toBe('shallots: answer of execution 1')
    expect(executions()).toBe(1)
    expect(tokens).toBe(10)
    expect(events).toEqual([expect.objectContaining({ type: 'hedging.skipped', reason: 'step_budget' })])
  })

  it('listeners and a logger that throw leave no call unsettled', async () => {
    const clock = manualClock()
    const thrower = () => {
      throw new Error('logger bug')
    }
    const quiet = () => {}
    // The stack itself logs with info; the layer logs with warn, and events go to debug.
    const logger = { debug: thrower, info: quiet, warn: thrower, error: quiet, child: () => logger }
    let n = 0
    const tool = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        await clock.sleep(++n === 1 ? 1000 : 10, signal)
        return n
      },
    })
    const stack = createStack({ middleware: [hedging({ delayMs: 100 })], tools: [tool], clock, logger })
    stack.on(() => {
      throw new Error('listener bug')
    })
    const pending = stack.dispatch({ id: 'c', name: 'search', args: {} })
    await clock.runAll()
    expect((await pending).value).toBe(2)
  })

  it('without delayMs, waits initialDelayMs until it has minSamples, then the tool’s recent p95', async () => {
    const { clock, events, dispatch } = setup(
      { minSamples: 10, sampleSize: 10, initialDelayMs: 5000 },
      { ms: [...Array(10).fill(80), 1000, 30] },
    )
    for (let i = 0; i < 10; i++) {
      const pending = dispatch()
      await clock.advance(80)
      expect((await pending).ok).toBe(true)
    }
    expect(events).toEqual([])
    const pending = dispatch()
    await clock.advance(80)
    expect(events).toEqual([expect.objectContaining({ type: 'hedging.started', delayMs: 80 })])
    await clock.runAll()
    expect((await pending).value).toBe('shallots: answer of execution 12')
  })

  it('a run cancelled while both attempts run: both signals abort, the caller gets cancelled, nothing is left behind', async () => {
    const { clock, signals, controller, dispatch } = setup({ delayMs: 100 }, { ms: [1000] })
    const pending = dispatch()
    await clock.advance(100)
    controller.abort(new Error('user pressed stop'))
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(signals.map((s) => s.aborted)).toEqual([true, true])
    expect(clock.pending).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('inside timeout(), the deadline covers both attempts', async () => {
    const { clock, signals, dispatch } = setup({ delayMs: 100 }, { ms: [1000] }, { outer: [timeout({ ms: 300 }).wrapToolCall] })
    const pending = dispatch()
    await clock.advance(300)
    const result = await pending
    expect(result.error?.code).toBe('timeout')
    expect(signals.map((s) => s.aborted)).toEqual([true, true])
    await clock.runAll()
    expect(clock.pending).toBe(0)
  })

  it('a tool that ignores its signal: the hedge’s answer wins, but the call ends only when the first attempt does', async () => {
    const { clock, dispatch } = setup({ delayMs: 100 }, { ms: [1000, 50], deaf: true })
    const pending = dispatch()
    await clock.runAll()
    const result = await pending
    expect(result.value).toBe('shallots: answer of execution 2')
    expect(result.durationMs).toBe(1000)
  })

  it('hands the hedge the arguments parsed by the tool’s schema, as the dispatcher does for the first attempt', async () => {
    const clock = manualClock()
    const seen: unknown[] = []
    const tool = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({ q: z.string().trim(), limit: z.number().default(10) }),
      effect: 'read',
      execute: async (args, { signal }) => {
        seen.push(args)
        await clock.sleep(seen.length === 1 ? 1000 : 10, signal)
        return seen.length
      },
    })
    const stack = createStack({ middleware: [hedging({ delayMs: 100 })], tools: [tool], clock })
    const pending = stack.dispatch({ id: 'c', name: 'search', args: { q: '  shallots ' } })
    await clock.runAll()
    expect((await pending).ok).toBe(true)
    expect(seen).toEqual([
      { q: 'shallots', limit: 10 },
      { q: 'shallots', limit: 10 },
    ])
  })

  it.each([
    [{ delayMs: 0 }, 'delayMs'],
    [{ delayMs: Number.NaN }, 'delayMs'],
    [{ percentile: 1 }, 'percentile'],
    [{ minSamples: 200, sampleSize: 100 }, 'minSamples'],
    [{ retryBudget: {} }, 'retryBudget'],
    [{ hedgeCost: -1 }, 'hedgeCost'],
    [{ effects: [] }, 'effects'],
    [{ delay: 100 }, 'delay'],
  ])('refuses %j with an error naming %s', (options, name) => {
    expect(() => hedging(options as never)).toThrow(OptionsError)
    expect(() => hedging(options as never)).toThrow(name)
  })
})
