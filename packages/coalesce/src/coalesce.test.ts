import {
  createRun,
  createStack,
  defineTool,
  type Json,
  type LayerEntry,
  type Middleware,
  OptionsError,
  type StackEvent,
  type ToolContext,
  type ToolEffect,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { constant, retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { coalesce } from './index.js'

/** A slow tool (`ms` of virtual time) that counts its executions and can be told to fail. */
function setup(
  middleware: (clock: ReturnType<typeof manualClock>) => LayerEntry<Middleware>[],
  { ms = 100, effect = 'read' as ToolEffect } = {},
) {
  const clock = manualClock()
  const seen = { executions: 0, aborted: 0, failNext: 0, signals: [] as AbortSignal[] }
  const tool = defineTool({
    name: 'lookup',
    description: 'a slow lookup',
    input: z.object({ q: z.string(), page: z.number().default(1) }),
    effect,
    execute: async ({ q, page }, { signal }) => {
      seen.executions++
      seen.signals.push(signal)
      try {
        await clock.sleep(ms, signal)
      } catch (err) {
        seen.aborted++
        throw err
      }
      if (seen.failNext > 0) {
        seen.failNext--
        throw new ToolError('upstream_error', 'the index answered 503', { category: 'transient', retryable: true, safeToRepeat: true })
      }
      return { q, page, hits: [`${q}-1`, `${q}-2`] }
    },
  })
  const stack = createStack({ middleware: middleware(clock), tools: [tool], clock })
  const events: StackEvent[] = []
  stack.on((event) => {
    if (event.type.startsWith('coalesce.') || event.type.startsWith('retry.')) events.push(event)
  })
  let n = 0
  const call = (args: Json, options: { run?: ReturnType<typeof createRun>; signal?: AbortSignal } = {}) =>
    stack.dispatch({ id: `c${++n}`, name: 'lookup', args }, options)
  return { clock, seen, stack, events, call }
}

const settle = <T>(p: Promise<T>) => {
  const box: { value?: T; error?: unknown; done: boolean } = { done: false }
  p.then(
    (value) => Object.assign(box, { value, done: true }),
    (error: unknown) => Object.assign(box, { error, done: true }),
  )
  return box
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve()
}

describe('coalesce', () => {
  it('100 identical concurrent reads from 100 runs: one execution, every caller gets the result (key order does not matter)', async () => {
    const { clock, seen, call, events } = setup(() => [coalesce()])
    const calls = Array.from({ length: 100 }, (_, i) =>
      call(i % 2 === 0 ? { q: 'shallot', page: 1 } : { page: 1, q: 'shallot' }, { run: createRun() }),
    )
    await clock.advance(100)
    const results = await Promise.all(calls)
    expect(seen.executions).toBe(1)
    for (const result of results) {
      expect(result.ok).toBe(true)
      expect(result.value).toEqual({ q: 'shallot', page: 1, hits: ['shallot-1', 'shallot-2'] })
    }
    // Each caller has its own copy: changing one cannot change what another read.
    expect(results[1]?.value).not.toBe(results[2]?.value)
    expect(events.filter((e) => e.type === 'coalesce.joined')).toHaveLength(99)
    // The default `page` is filled in before the comparison: the parsed arguments are what count.
    const again = [call({ q: 'shallot' }), call({ q: 'shallot', page: 1 })]
    await clock.advance(100)
    await Promise.all(again)
    expect(seen.executions).toBe(2)
  })

  it('shares only running calls: the next identical call after the result runs again', async () => {
    const { clock, seen, call } = setup(() => [coalesce()])
    const first = call({ q: 'a' })
    await clock.advance(100)
    expect((await first).ok).toBe(true)
    const second = call({ q: 'a' })
    await clock.advance(100)
    expect((await second).ok).toBe(true)
    expect(seen.executions).toBe(2)
  })

  it('different arguments never share', async () => {
    const { clock, seen, call } = setup(() => [coalesce()])
    const calls = [call({ q: 'a' }), call({ q: 'b' }), call({ q: 'a', page: 2 })]
    await clock.advance(100)
    const results = await Promise.all(calls)
    expect(seen.executions).toBe(3)
    expect(results.map((r) => (r.value as { q: string; page: number }).q)).toEqual(['a', 'b', 'a'])
  })

  it('a write never coalesces; an idempotent tool only with idempotent: true', async () => {
    for (const [effect, options, executions] of [
      ['write', { idempotent: true }, 3],
      ['idempotent', {}, 3],
      ['idempotent', { idempotent: true }, 1],
    ] as const) {
      const { clock, seen, call } = setup(() => [coalesce(options)], { effect })
      const calls = [call({ q: 'x' }), call({ q: 'x' }), call({ q: 'x' })]
      await clock.advance(100)
      expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
      expect(seen.executions, `${effect} ${JSON.stringify(options)}`).toBe(executions)
    }
  })

  it('one of three callers cancels: it leaves at once, the other two get the result, the execution is not aborted', async () => {
    const { clock, seen, call, events } = setup(() => [coalesce()])
    const controllers = [new AbortController(), new AbortController(), new AbortController()]
    const calls = controllers.map((c) => settle(call({ q: 'x' }, { signal: c.signal })))
    await clock.advance(50)
    controllers[0]?.abort() // the first caller: the one whose layers run the shared execution
    await flush()
    expect(calls[0]?.done).toBe(true)
    expect(calls[0]?.error).toMatchObject({ name: 'LoopError', kind: 'cancelled' })
    expect(calls[1]?.done).toBe(false)
    expect(seen.signals[0]?.aborted).toBe(false)
    expect(events.find((e) => e.type === 'coalesce.left')).toMatchObject({ callers: 2, stopped: false })
    await clock.advance(50)
    await flush()
    for (const box of calls.slice(1)) expect((box.value as ToolResult).value).toMatchObject({ q: 'x' })
    expect(seen).toMatchObject({ executions: 1, aborted: 0 })
  })

  it('the shared execution is aborted only when every caller has gone', async () => {
    const { clock, seen, call, events } = setup(() => [coalesce()])
    const controllers = [new AbortController(), new AbortController(), new AbortController()]
    const calls = controllers.map((c) => settle(call({ q: 'x' }, { signal: c.signal })))
    await clock.advance(10)
    controllers[1]?.abort()
    controllers[0]?.abort()
    await flush()
    expect(seen.signals[0]?.aborted).toBe(false)
    controllers[2]?.abort()
    await flush()
    expect(seen.signals[0]?.aborted).toBe(true)
    expect(seen.aborted).toBe(1)
    expect(calls.every((c) => c.done && c.error !== undefined)).toBe(true)
    expect(events.filter((e) => e.type === 'coalesce.left').map((e) => e.stopped)).toEqual([false, false, true])
    // A new identical call after they all left starts afresh rather than joining the aborted one.
    const fresh = call({ q: 'x' })
    await clock.advance(100)
    expect((await fresh).ok).toBe(true)
    expect(seen.executions).toBe(2)
    expect(clock.pending).toBe(0)
  })

  it('a result that arrives after a caller timed out does not change that caller: its result stays the timeout', async () => {
    // The deadline is outside coalesce, so each caller has its own: A started at 0, B joined at 50.
    const { clock, seen, call } = setup(() => [timeout({ ms: 100 }), coalesce()], { ms: 120 })
    const a = settle(call({ q: 'slow' }))
    await clock.advance(50)
    const b = settle(call({ q: 'slow' }))
    await clock.advance(50)
    await flush()
    const timedOut = a.value as ToolResult
    expect(timedOut.error?.code).toBe('timeout')
    const before = JSON.stringify(timedOut)
    await clock.advance(20) // the shared execution answers at 120, inside B's deadline (150)
    await flush()
    expect((b.value as ToolResult).value).toMatchObject({ q: 'slow' })
    expect(JSON.stringify(a.value)).toBe(before)
    expect(seen).toMatchObject({ executions: 1, aborted: 0 })
  })

  it("a failed shared execution reaches each caller's own retry, and each retries on its own", async () => {
    const { clock, seen, call, events } = setup(() => [retry({ maxAttempts: 3, backoff: constant(10), retryBudget: false }), coalesce()])
    seen.failNext = 1
    const calls = [call({ q: 'x' }), call({ q: 'x' }), call({ q: 'x' })]
    await clock.runAll()
    const results = await Promise.all(calls)
    expect(results.map((r) => [r.ok, r.attempts])).toEqual([
      [true, 2],
      [true, 2],
      [true, 2],
    ])
    // Three retries were scheduled, one by each caller's retry; being identical again, the repeats shared one execution.
    expect(events.filter((e) => e.type === 'retry.scheduled')).toHaveLength(3)
    expect(seen.executions).toBe(2)
  })

  it('the first caller times out while the shared execution runs on for another: its retry joins that same execution', async () => {
    const { clock, seen, call, events } = setup(
      () => [retry({ maxAttempts: 2, backoff: constant(0), retryBudget: false }), timeout({ ms: 100 }), coalesce()],
      { ms: 120 },
    )
    const a = settle(call({ q: 'x' }))
    await clock.advance(50)
    const b = settle(call({ q: 'x' }))
    await clock.advance(50) // A's deadline: it leaves, B still waits, A's retry comes back at once
    await flush()
    expect(a.done).toBe(false)
    expect(events.filter((e) => e.type === 'coalesce.joined')).toHaveLength(2)
    await clock.advance(20)
    await flush()
    expect([(a.value as ToolResult).ok, (a.value as ToolResult).attempts]).toEqual([true, 2])
    expect((b.value as ToolResult).ok).toBe(true)
    expect(seen).toMatchObject({ executions: 1, aborted: 0 })
  })

  it('in the documented order (retry → coalesce → timeout) the shared deadline reaches every caller, each retries, the repeats share again', async () => {
    const { clock, seen, call } = setup(
      () => [retry({ maxAttempts: 2, backoff: constant(0), retryBudget: false }), coalesce(), timeout({ ms: 50 })],
      {
        ms: 100,
      },
    )
    const calls = [call({ q: 'x' }), call({ q: 'x' })]
    await clock.advance(50) // the first attempt's deadline: both callers read timeout, both retry, the repeats share again
    await clock.runAll()
    const results = await Promise.all(calls)
    expect(results.map((r) => r.error?.code ?? 'ok')).toEqual(['timeout', 'timeout'])
    expect(results.map((r) => r.attempts)).toEqual([2, 2])
    expect(seen.executions).toBe(2)
    expect(seen.aborted).toBe(2)
  })

  it('a tool that never settles: once every caller left, the next identical call starts afresh', async () => {
    const clock = manualClock()
    let started = 0
    const stuck = defineTool({
      name: 'stuck',
      description: 'never answers',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        started++
        return new Promise(() => {})
      },
    })
    const stack = createStack({ middleware: [coalesce()], tools: [stuck], clock })
    const controllers = [new AbortController(), new AbortController()]
    const calls = controllers.map((c, i) => settle(stack.dispatch({ id: `s${i}`, name: 'stuck', args: {} }, { signal: c.signal })))
    await flush()
    for (const c of controllers) c.abort()
    await flush()
    expect(calls.every((c) => c.done && (c.error as { kind?: string }).kind === 'cancelled')).toBe(true)
    const again = new AbortController()
    const third = settle(stack.dispatch({ id: 's3', name: 'stuck', args: {} }, { signal: again.signal }))
    await flush()
    expect(started).toBe(2)
    again.abort()
    await flush()
    expect(third.done).toBe(true)
  })

  it('a listener that throws on every event changes no caller’s outcome', async () => {
    const { clock, seen, stack, call } = setup(() => [coalesce()])
    stack.on(() => {
      throw new Error('listener bug')
    })
    const calls = [call({ q: 'x' }), call({ q: 'x' }), call({ q: 'x' })]
    await clock.advance(100)
    expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
    expect(seen.executions).toBe(1)
  })

  it('a caller whose retry has given up keeps its failure while the others retry', async () => {
    const { clock, seen, call } = setup(() => [retry({ maxAttempts: 3, backoff: constant(10), retryBudget: false }), coalesce()])
    seen.failNext = 3
    const calls = [call({ q: 'x' }), call({ q: 'x' })]
    await clock.runAll()
    const results = await Promise.all(calls)
    expect(results.map((r) => r.error?.code)).toEqual(['upstream_error', 'upstream_error'])
    expect(results.map((r) => r.attempts)).toEqual([3, 3])
    expect(seen.executions).toBe(3)
  })

  it('different tenants never share an execution, and two stacks sharing one layer never share', async () => {
    const tenantOf = (ctx: ToolContext) => String(ctx.run.state.tenant)
    const { clock, seen, call } = setup(() => [coalesce({ scope: tenantOf })])
    const tenants = ['acme', 'globex', '__proto__', 'acme', 'globex', '__proto__']
    const calls = tenants.map((tenant) => call({ q: 'balance' }, { run: createRun({ state: { tenant } }) }))
    await clock.advance(100)
    expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
    expect(seen.executions).toBe(3)

    const layer = coalesce()
    const one = setup(() => [layer])
    const two = setup(() => [layer])
    const both = [one.call({ q: 'x' }), two.call({ q: 'x' })]
    await Promise.all([one.clock.advance(100), two.clock.advance(100)])
    await Promise.all(both)
    expect([one.seen.executions, two.seen.executions]).toEqual([1, 1])
  })

  it('a scope function that throws or answers garbage: the call runs on its own, told as coalesce.scope_failed', async () => {
    const answers: unknown[] = [undefined, '', 'has space', 'x'.repeat(129), 42]
    let i = 0
    const scope = () => {
      const answer = answers[i++ % (answers.length + 1)]
      if (answer === undefined && i % 6 === 1) throw new Error('no tenant on this run')
      return answer as string
    }
    const { clock, seen, call, events } = setup(() => [coalesce({ scope })])
    const calls = Array.from({ length: 6 }, () => call({ q: 'x' }))
    await clock.advance(100)
    expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
    expect(seen.executions).toBe(6)
    const problems = events.filter((e) => e.type === 'coalesce.scope_failed').map((e) => e.problem)
    expect(problems).toHaveLength(6)
    expect(problems[0]).toBe('threw: no tenant on this run')
    expect(problems[2]).toBe('must be 1-128 printable ASCII characters without spaces, got "has space"')
  })

  it('arguments that do not parse are answered by the stack, call by call', async () => {
    const { clock, seen, call } = setup(() => [coalesce()])
    const calls = [call({ q: 7 }), call({ q: 7 })]
    await clock.advance(100)
    const results = await Promise.all(calls)
    expect(results.map((r) => r.error?.code)).toEqual(['invalid_arguments', 'invalid_arguments'])
    expect(seen.executions).toBe(0)
  })

  it('a failure reaches every caller as the same soft error, and nothing is kept for the next call', async () => {
    const { clock, seen, call } = setup(() => [coalesce()])
    seen.failNext = 1
    const calls = [call({ q: 'x' }), call({ q: 'x' })]
    await clock.advance(100)
    expect((await Promise.all(calls)).map((r) => r.error?.code)).toEqual(['upstream_error', 'upstream_error'])
    const next = call({ q: 'x' })
    await clock.advance(100)
    expect((await next).ok).toBe(true)
  })

  it('refuses bad options with an error naming the option', () => {
    expect(() => coalesce({ scope: 'tenant' as never })).toThrow(OptionsError)
    expect(() => coalesce({ scope: 'tenant' as never })).toThrow(/scope: must be a function/)
    expect(() => coalesce({ idempotent: 1 as never })).toThrow(/idempotent/)
    expect(() => coalesce(JSON.parse('{"__proto__": {"idempotent": true}}'))).toThrow(/__proto__/)
  })
})
