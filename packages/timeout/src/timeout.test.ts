import { execFile } from 'node:child_process'
import { getEventListeners } from 'node:events'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createRun,
  createStack,
  defineTool,
  type Logger,
  LoopError,
  MAY_HAVE_TAKEN_EFFECT,
  type Middleware,
  OptionsError,
  type StackEvent,
  type ToolContext,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { timeout } from './index.js'

function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

const tool = (name: string, execute: (signal: AbortSignal) => unknown, effect: 'read' | 'write' = 'read') =>
  defineTool({ name, description: name, input: z.object({}), effect, execute: (_args, { signal }) => execute(signal) })

/** Stops only when its signal aborts, rejecting with the signal's reason, the way a well-behaved fetch does. */
const cooperative = tool('slow', (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))))
/** Ignores its signal and never settles. */
const stubborn = tool('stubborn', () => new Promise(() => {}))
const quick = tool('quick', () => 'done')
const failing = tool('failing', () => {
  throw new ToolError('not_found', 'file src/mian.rs not found')
})

const call = (name: string, id = 'c1') => ({ id, name, args: {} })

function spyLogger() {
  const calls = { warn: [] as unknown[][], info: [] as unknown[][], error: [] as unknown[][] }
  const logger: Logger = {
    debug: () => {},
    info: (...args) => calls.info.push(args),
    warn: (...args) => calls.warn.push(args),
    error: (...args) => calls.error.push(args),
    child: () => logger,
  }
  return { logger, calls }
}

/** Records what the layer outside timeout sees, and keeps the context for later inspection. */
function outside(seen: { ctx?: ToolContext; before?: AbortSignal; after?: AbortSignal }): Middleware {
  return async function outside(ctx, next) {
    seen.ctx = ctx
    seen.before = ctx.signal
    try {
      await next()
    } finally {
      seen.after = ctx.signal
    }
  }
}

function settleFlag<T>(promise: Promise<T>) {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false }
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  )
  return state
}

async function macrotask() {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

describe('timeout() on the manual clock', () => {
  it('fails the attempt at exactly ms, not one millisecond earlier', async () => {
    const clock = manualClock()
    const stack = createStack({ tools: [stubborn], clock, middleware: [timeout({ ms: 50 })] })
    const result = settleFlag(stack.dispatch(call('stubborn')))
    await clock.advance(49)
    expect(result.done).toBe(false)
    await clock.advance(1)
    expect(result.done).toBe(true)
    expect(clock.now()).toBe(50)
    expect(result.value?.error).toEqual({
      code: 'timeout',
      category: 'transient',
      message: "Tool 'stubborn' timed out after 0.05s",
      hint: 'try again, or ask for less at once',
      retryable: true,
      safeToRepeat: false,
    })
  })

  it('aborts the signal the tool received, with the timeout error as its reason', async () => {
    const clock = manualClock()
    let toolSignal: AbortSignal | undefined
    const watcher = tool('watcher', (signal) => {
      toolSignal = signal
      return new Promise(() => {})
    })
    const stack = createStack({ tools: [watcher], clock, middleware: [timeout({ ms: 1000 })] })
    const pending = stack.dispatch(call('watcher'))
    await clock.advance(999)
    expect(toolSignal?.aborted).toBe(false)
    await clock.advance(1)
    expect(toolSignal?.aborted).toBe(true)
    expect(ToolError.is(toolSignal?.reason) && toolSignal.reason.code).toBe('timeout')
    expect((await pending).error?.code).toBe('timeout')
  })

  it('gives the inner layers the deadline signal and hands the outer layers their own signal back', async () => {
    const clock = manualClock()
    const seen: { ctx?: ToolContext; before?: AbortSignal; after?: AbortSignal } = {}
    let inner: AbortSignal | undefined
    const spyInside: Middleware = async function spyInside(ctx, next) {
      inner = ctx.signal
      await next()
    }
    const stack = createStack({ tools: [cooperative], clock, middleware: [outside(seen), timeout({ ms: 10 }), spyInside] })
    const pending = stack.dispatch(call('slow'))
    await clock.advance(10)
    await pending
    expect(inner).toBeDefined()
    expect(inner).not.toBe(seen.before)
    expect(inner?.aborted).toBe(true)
    expect(seen.after).toBe(seen.before)
    expect(seen.after?.aborted).toBe(false)
  })

  it('uses the per-tool deadline and words the seconds the way a person would', async () => {
    const clock = manualClock()
    const chargeCard = tool('charge_card', () => new Promise(() => {}), 'write')
    const stack = createStack({ tools: [chargeCard, stubborn], clock, middleware: [timeout({ ms: 2000, tools: { charge_card: 20_000 } })] })
    const card = settleFlag(stack.dispatch(call('charge_card')))
    const other = settleFlag(stack.dispatch(call('stubborn', 'c2')))
    await clock.advance(2000)
    expect(other.value?.error?.message).toBe("Tool 'stubborn' timed out after 2s")
    expect(card.done).toBe(false)
    await clock.advance(18_000)
    expect(card.value?.error).toMatchObject({
      message: "Tool 'charge_card' timed out after 20s",
      // Never "try again": the identical write is refused by idempotency, so the model is told what can work instead.
      hint: MAY_HAVE_TAKEN_EFFECT,
      safeToRepeat: false,
    })
  })

  it('ignores a late resolve: ctx.result stays unset, run state and budget do not move, nothing is unhandled', async () => {
    const clock = manualClock()
    const gate = deferred<string>()
    const late = tool('late', () => gate.promise, 'write')
    const { logger, calls } = spyLogger()
    const seen: { ctx?: ToolContext } = {}
    const stack = createStack({ tools: [late], clock, logger, middleware: [outside(seen), timeout({ ms: 50 })] })
    const events: StackEvent[] = []
    stack.on((event) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!event.type.startsWith('call.')) events.push(event)
    })
    const run = createRun({ state: { notes: { kept: true } } })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const pending = stack.dispatch(call('late'), { run })
      await clock.advance(50)
      const result = await pending
      const before = JSON.stringify(result)
      expect(result.error?.code).toBe('timeout')
      expect(run.budget.used).toBe(1)

      gate.resolve('arrived too late')
      await clock.advance(1000)
      await macrotask()

      expect(seen.ctx?.result).toBeUndefined()
      expect(run.state).toEqual({ notes: { kept: true } })
      expect(run.budget.used).toBe(1)
      expect(result.ok).toBe(false)
      expect(JSON.stringify({ ...result, trace: JSON.parse(before).trace })).toBe(before)
      expect(unhandled).toEqual([])
      expect(calls.warn).toEqual([
        [{ attempt: 1, timeoutMs: 50, after: 'expired', outcome: 'stopped', lateByMs: 0, error: undefined }, 'late tool result ignored'],
      ])
      expect(events.map((e) => e.type)).toEqual(['timeout.expired', 'timeout.late'])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('ignores a late rejection of any kind without an unhandled rejection', async () => {
    const clock = manualClock()
    const gate = deferred<string>()
    const late = tool('late', () => gate.promise)
    const { logger, calls } = spyLogger()
    const stack = createStack({ tools: [late], clock, logger, middleware: [timeout({ ms: 50 })] })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const pending = stack.dispatch(call('late'))
      await clock.advance(50)
      expect((await pending).error?.code).toBe('timeout')
      await clock.advance(7)
      gate.reject(new TypeError('socket exploded'))
      await clock.advance(0)
      await macrotask()
      expect(unhandled).toEqual([])
      expect(calls.warn).toEqual([
        [{ attempt: 1, timeoutMs: 50, after: 'expired', outcome: 'rejected', lateByMs: 7, error: 'TypeError' }, 'late tool result ignored'],
      ])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('never lets a throwing logger or listener turn a late settle into an unhandled rejection', async () => {
    const clock = manualClock()
    const gate = deferred<string>()
    const late = tool('late', () => gate.promise)
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      error: () => {},
      warn: () => {
        throw new Error('logger bug')
      },
      child: () => logger,
    }
    const stack = createStack({ tools: [late], clock, logger, middleware: [timeout({ ms: 50 })] })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const pending = stack.dispatch(call('late'))
      await clock.advance(50)
      expect((await pending).error?.code).toBe('timeout')
      gate.reject(new Error('late failure'))
      await clock.advance(0)
      await macrotask()
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('gives each retried attempt a fresh deadline, and a late first attempt cannot leak into the second', async () => {
    const clock = manualClock()
    const gates = [deferred<string>(), deferred<string>()]
    const signals: AbortSignal[] = []
    const flaky = tool('flaky', (signal) => {
      signals.push(signal)
      return gates[signals.length - 1]?.promise
    })
    const seen: { ctx?: ToolContext } = {}
    const retryOnce: Middleware = async function retryOnce(ctx, next) {
      try {
        await next()
      } catch (err) {
        if (!ToolError.is(err) || !err.retryable) throw err
        ctx.attempt++
        await next()
      }
    }
    const stack = createStack({ tools: [flaky], clock, middleware: [outside(seen), retryOnce, timeout({ ms: 50 })] })
    const result = settleFlag(stack.dispatch(call('flaky')))
    await clock.advance(50)
    expect(signals).toHaveLength(2)
    expect(signals[0]?.aborted).toBe(true)
    expect(signals[1]?.aborted).toBe(false)

    gates[0]?.resolve('stale')
    await clock.advance(10)
    expect(seen.ctx?.result).toBeUndefined()
    expect(result.done).toBe(false)

    gates[1]?.resolve('fresh')
    await clock.advance(0)
    expect(result.value).toMatchObject({ ok: true, value: 'fresh', attempts: 2 })
    expect(result.value?.trace.map((e) => e.type)).toEqual(['timeout.expired', 'timeout.late'])
  })

  it('ends the call with LoopError cancelled, not a timeout, when the run is cancelled', async () => {
    const clock = manualClock()
    const parent = new AbortController()
    const run = createRun({ signal: parent.signal })
    const stack = createStack({ tools: [stubborn], clock, middleware: [timeout({ ms: 50 })] })
    const pending = stack.dispatch(call('stubborn'), { run })
    pending.catch(() => {})
    await clock.advance(20)
    parent.abort(new Error('user pressed Ctrl-C'))
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(clock.pending).toBe(0)
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0)
  })

  it('passes the run cancellation on to a cooperative tool and still reports cancellation', async () => {
    const clock = manualClock()
    const parent = new AbortController()
    let toolSignal: AbortSignal | undefined
    const watcher = tool('watcher', (signal) => {
      toolSignal = signal
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))))
    })
    const stack = createStack({ tools: [watcher], clock, middleware: [timeout({ ms: 50 })] })
    const pending = stack.dispatch(call('watcher'), { run: createRun({ signal: parent.signal }) })
    pending.catch(() => {})
    await clock.advance(1)
    parent.abort()
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(toolSignal?.aborted).toBe(true)
  })

  it('reports cancellation when the run is cancelled at the same moment the deadline passes', async () => {
    const clock = manualClock()
    const parent = new AbortController()
    const stack = createStack({ tools: [stubborn], clock, middleware: [timeout({ ms: 50 })] })
    const pending = stack.dispatch(call('stubborn'), { run: createRun({ signal: parent.signal }) })
    pending.catch(() => {})
    await clock.advance(49)
    const advancing = clock.advance(1)
    parent.abort()
    await advancing
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
  })

  it('does not start the tool when the run is already cancelled', async () => {
    const clock = manualClock()
    const execute = vi.fn(() => 'never')
    const stack = createStack({ tools: [tool('t', execute)], clock, middleware: [timeout({ ms: 50 })] })
    const parent = new AbortController()
    const run = createRun({ signal: parent.signal })
    const layer = timeout({ ms: 50 }).wrapToolCall
    parent.abort()
    await expect(stack.dispatch(call('t'), { run })).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    // Directly through the layer too: the stack refuses an aborted run before any layer runs.
    const ctx = { call: call('t'), signal: parent.signal, attempt: 1 } as unknown as ToolContext
    await expect(layer(ctx, async () => {})).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(execute).not.toHaveBeenCalled()
  })

  it('passes a ToolError and a LoopError from inside through untouched', async () => {
    const clock = manualClock()
    const loop = new LoopError('budget_exhausted', 'no steps left')
    const hard = tool('hard', () => {
      throw loop
    })
    const stack = createStack({ tools: [failing, hard, quick], clock, middleware: [timeout({ ms: 50 })] })
    expect((await stack.dispatch(call('failing'))).error).toMatchObject({ code: 'not_found', message: 'file src/mian.rs not found' })
    await expect(stack.dispatch(call('hard'))).rejects.toBe(loop)
    expect(await stack.dispatch(call('quick'))).toMatchObject({ ok: true, value: 'done' })
    expect(clock.pending).toBe(0)
  })

  it('leaves the parent signal listener count where it started after 1,000 calls, and no sleeper behind', async () => {
    const clock = manualClock()
    const parent = new AbortController()
    const run = createRun({ signal: parent.signal })
    const stack = createStack({ tools: [quick, failing, cooperative, stubborn], clock, middleware: [timeout({ ms: 50 })] })
    const before = getEventListeners(parent.signal, 'abort').length
    const names = ['quick', 'failing', 'slow', 'stubborn']
    const all = Promise.all(Array.from({ length: 1000 }, (_, i) => stack.dispatch(call(names[i % 4] as string, `c${i}`), { run })))
    await clock.advance(0)
    // The 500 slow and stubborn calls are waiting, all through one shared listener (fifty would warn),
    // so the count really moves and the final check means something.
    expect(getEventListeners(parent.signal, 'abort').length).toBe(before + 1)
    expect(clock.pending).toBe(500)
    await clock.advance(50)
    const results: ToolResult[] = await all
    const codes = new Map<string, number>()
    for (const r of results) codes.set(r.error?.code ?? 'ok', (codes.get(r.error?.code ?? 'ok') ?? 0) + 1)
    expect(Object.fromEntries(codes)).toEqual({ ok: 250, not_found: 250, timeout: 500 })
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(before)
    expect(clock.pending).toBe(0)
  })
})

describe('timeout() on the system clock with fake timers', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('fires at exactly ms', async () => {
    vi.useFakeTimers()
    const stack = createStack({ tools: [cooperative], middleware: [timeout({ ms: 2000 })] })
    const result = settleFlag(stack.dispatch(call('slow')))
    await vi.advanceTimersByTimeAsync(1999)
    expect(result.done).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(result.value?.error?.message).toBe("Tool 'slow' timed out after 2s")
  })

  it('lets nothing change once every path settled: time passing the deadlines reports nothing late and leaves no timer', async () => {
    vi.useFakeTimers()
    const parent = new AbortController()
    const stack = createStack({ tools: [quick, failing, cooperative, stubborn], middleware: [timeout({ ms: 1000 })] })
    const events: string[] = []
    stack.on((event) => {
      if (event.type.startsWith('timeout.')) events.push(event.type)
    })
    const ok = await stack.dispatch(call('quick'))
    const soft = await stack.dispatch(call('failing'))
    await vi.advanceTimersByTimeAsync(5000)
    expect(events).toEqual([])
    const timedOut = stack.dispatch(call('slow'))
    const cancelled = stack.dispatch(call('stubborn'), { run: createRun({ signal: parent.signal }) })
    cancelled.catch(() => {})
    await vi.advanceTimersByTimeAsync(0)
    parent.abort()
    await expect(cancelled).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    await vi.advanceTimersByTimeAsync(1000)
    expect([ok.ok, soft.error?.code, (await timedOut).error?.code]).toEqual([true, 'not_found', 'timeout'])
    await vi.advanceTimersByTimeAsync(60_000)
    // The cancelled call's deadline never fires: one expiry, for the one call that missed its deadline.
    expect(events.filter((type) => type === 'timeout.expired')).toHaveLength(1)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('leaves the parent signal listener count where it started after 1,000 calls', async () => {
    vi.useFakeTimers()
    const parent = new AbortController()
    const run = createRun({ signal: parent.signal })
    const stack = createStack({ tools: [quick, failing, cooperative], middleware: [timeout({ ms: 100 })] })
    const names = ['quick', 'failing', 'slow']
    const all = Promise.all(Array.from({ length: 1000 }, (_, i) => stack.dispatch(call(names[i % 3] as string, `c${i}`), { run })))
    await vi.advanceTimersByTimeAsync(100)
    expect((await all).filter((r) => r.error?.code === 'timeout')).toHaveLength(333)
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0)
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe('timeout() options', () => {
  it.each([
    [{ ms: 0 }, 'option ms'],
    [{ ms: -5 }, 'option ms'],
    [{ ms: 1.5 }, 'option ms'],
    [{ ms: Number.POSITIVE_INFINITY }, 'option ms'],
    [{ ms: 2 ** 31 }, 'option ms'],
    [{ ms: '5s' }, 'option ms'],
    [{ ms: 100, tools: { charge_card: 0 } }, 'option tools.charge_card'],
    [{ ms: 100, tool: { charge_card: 10 } }, 'tool'],
  ])('refuses %j at construction, naming the option', (options, named) => {
    expect(() => timeout(options as never)).toThrow(OptionsError)
    expect(() => timeout(options as never)).toThrow(named)
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    const options: { ms: number; tools?: Record<string, number> } = { ms: 100 }
    timeout(options)
    options.ms = 0
    expect(() => timeout(options)).toThrow(/^timeout\(\): option ms: .*\(got 0\)$/)
    options.ms = 100
    options.tools = { charge_card: -1 }
    expect(() => timeout(options)).toThrow(/option tools\.charge_card/)
    const frozen = Object.freeze({ ms: 1.5 })
    expect(() => timeout(frozen)).toThrow(/option ms/)
    expect(() => timeout(frozen)).toThrow(/option ms/)
    expect(() => timeout(JSON.parse('{"__proto__": {"ms": 5}}'))).toThrow(/unknown option "__proto__"/)
  })

  it('defaults to 30 seconds', async () => {
    const clock = manualClock()
    const stack = createStack({ tools: [stubborn], clock, middleware: [timeout()] })
    const result = settleFlag(stack.dispatch(call('stubborn')))
    await clock.advance(29_999)
    expect(result.done).toBe(false)
    await clock.advance(1)
    expect(result.value?.error?.message).toBe("Tool 'stubborn' timed out after 30s")
  })
})

describe('timeout(): work the tool left running', () => {
  it('is cancelled when the attempt settles, whether it succeeded, failed or missed its deadline', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      for (const ending of ['succeeds', 'fails', 'expires'] as const) {
        const fired = vi.fn()
        const leaves = tool('leaves_timer', async (signal) => {
          const t = setTimeout(fired, 60_000)
          signal.addEventListener('abort', () => clearTimeout(t), { once: true })
          if (ending === 'fails') throw new ToolError('not_found', 'no such page')
          if (ending === 'expires') return new Promise(() => {})
          return 'ok'
        })
        const clock = manualClock()
        const stack = createStack({ tools: [leaves], clock, middleware: [timeout({ ms: 50 })] })
        const pending = stack.dispatch(call('leaves_timer'))
        await clock.advance(50)
        const result = await pending
        expect(result.error?.code ?? 'ok').toBe({ succeeds: 'ok', fails: 'not_found', expires: 'timeout' }[ending])
        expect(vi.getTimerCount()).toBe(0)
        vi.advanceTimersByTime(60_000)
        expect(fired).not.toHaveBeenCalled()
      }
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('timeout() and the life of the process', () => {
  const here = dirname(fileURLToPath(import.meta.url))
  /** Runs a module in a fresh Node process from this package (its dist build), and returns what it printed. */
  function node(source: string): Promise<{ code: number | null; out: string }> {
    return new Promise((resolve, reject) => {
      const child = execFile(process.execPath, ['--input-type=module', '-e', source], { cwd: join(here, '..') }, (err, stdout) => {
        if (err !== null && typeof err.code !== 'number') reject(err)
        else resolve({ code: child.exitCode, out: stdout })
      })
    })
  }
  const prelude = `
    import { createStack, defineTool } from '@shallot/core'
    import { timeout } from '@shallot/timeout'
    import { z } from 'zod'
    const input = z.object({})
    const quick = defineTool({ name: 'quick', description: 'd', input, effect: 'read', execute: () => 'ok' })
    const hung = defineTool({ name: 'hung', description: 'd', input, effect: 'read', execute: () => new Promise(() => {}) })
  `

  it('lets the process exit as soon as its calls settled, long before their deadline', async () => {
    // Were the deadline holding the process, it would live ten minutes and the test would time out.
    const { code, out } = await node(`${prelude}
      const stack = createStack({ tools: [quick], middleware: [timeout({ ms: 600_000 })] })
      const results = []
      for (let i = 0; i < 100; i++) results.push((await stack.dispatch({ id: 'c' + i, name: 'quick', args: {} })).ok)
      console.log(results.every(Boolean))
    `)
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: 'true' })
  }, 30_000)

  it('keeps the process alive while a deadline is pending, so a hung tool still gets its timeout answer', async () => {
    const { code, out } = await node(`${prelude}
      const stack = createStack({ tools: [hung], middleware: [timeout({ ms: 20 })] })
      console.log((await stack.dispatch({ id: 'c', name: 'hung', args: {} })).error.code)
    `)
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: 'timeout' })
  }, 30_000)
})
