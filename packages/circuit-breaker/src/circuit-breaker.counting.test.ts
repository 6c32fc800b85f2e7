import { createRun, createStack, defineTool, LoopError, type Middleware, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive, indictsTool } from './index.js'

const call = (id = 'c', name = 'tool') => ({ id, name, args: {} })

/** A tool that throws whatever the test queues, or answers 'fine'. */
function scriptedTool() {
  const script: unknown[] = []
  let calls = 0
  const tool = defineTool({
    name: 'tool',
    description: 'Does a thing',
    input: z.object({}),
    effect: 'read',
    execute: (_args, { signal }) => {
      calls++
      const next = script.shift()
      if (next === 'hang') {
        if (signal.aborted) return Promise.reject(signal.reason)
        return new Promise<string>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
      }
      if (next !== undefined) throw next
      return 'fine'
    },
  })
  return {
    tool,
    script,
    get calls() {
      return calls
    },
  }
}

function breakerStack(options: Parameters<typeof circuitBreaker>[0] = {}, outer: Middleware[] = []) {
  const t = scriptedTool()
  const clock = manualClock()
  const stack = createStack({
    middleware: [...outer, circuitBreaker({ policy: consecutive({ threshold: 1 }), ...options })],
    tools: [t.tool],
    clock,
    // What the breaker counts is the question here, not whether the run ends on a `user`/`fatal` error.
    escalate: { fatal: false, user: false },
  })
  return Object.assign(t, { stack, clock })
}

describe('what counts against the circuit', () => {
  it.each([
    ['timeout', undefined],
    ['upstream_error', undefined],
    ['network_error', undefined],
    ['rate_limited', undefined],
    ['tool_panic', 'recoverable'],
    ['flaky_backend', 'transient'],
  ] as const)('counts %s', async (code, category) => {
    const t = breakerStack()
    t.script.push(new ToolError(code, `${code} happened`, category === undefined ? {} : { category }))
    expect((await t.stack.dispatch(call('1'))).error?.code).toBe(code)
    expect((await t.stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
    expect(t.calls).toBe(1)
  })

  it('counts a throw that is not a ToolError at all: the tool crashed', async () => {
    const t = breakerStack()
    t.script.push(new Error('segfault-ish'))
    await expect(t.stack.dispatch(call('1'))).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'tool_crashed')
    expect((await t.stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
  })

  it.each([
    'invalid_arguments',
    'not_found',
    'permission_denied',
    'auth_required',
    'conflict',
    'circuit_open',
    'repeated_failure',
    'cancelled',
    'ambiguous_query',
  ])('never counts %s', async (code) => {
    const t = breakerStack()
    for (let i = 0; i < 50; i++) t.script.push(new ToolError(code, `${code} happened`))
    for (let i = 0; i < 50; i++) expect((await t.stack.dispatch(call(`${i}`))).error?.code).toBe(code)
    expect((await t.stack.dispatch(call('last'))).ok).toBe(true)
    expect(t.calls).toBe(51)
  })

  it("never counts a bulkhead's overloaded, transient as it is: the queue in front of the tool was full, the tool did not fail", async () => {
    const t = breakerStack()
    const overloaded = () =>
      new ToolError('overloaded', "tool 'tool' is overloaded: 4 calls are running and 10 are waiting, the most allowed", {
        category: 'transient',
        retryable: false,
        safeToRepeat: true,
      })
    for (let i = 0; i < 20; i++) t.script.push(overloaded())
    for (let i = 0; i < 20; i++) expect((await t.stack.dispatch(call(`${i}`))).error?.code).toBe('overloaded')
    expect((await t.stack.dispatch(call('last'))).ok).toBe(true)
    expect(indictsTool(overloaded())).toBe(false)
  })

  it('lets calls to unknown tools pass without touching any circuit', async () => {
    const t = breakerStack()
    const events: string[] = []
    t.stack.on((e) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!e.type.startsWith('call.')) events.push(e.type)
    })
    for (let i = 0; i < 5; i++) expect((await t.stack.dispatch(call(`${i}`, 'nope'))).error?.code).toBe('unknown_tool')
    expect(events).toEqual([])
  })

  it('never counts the caller’s cancellation, and frees nothing it did not hold', async () => {
    const t = breakerStack()
    t.script.push('hang')
    const controller = new AbortController()
    const cancelled = t.stack.dispatch(call('1'), { signal: controller.signal })
    await t.clock.advance(0)
    controller.abort()
    await expect(cancelled).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect((await t.stack.dispatch(call('2'))).ok).toBe(true)
  })

  it('counts an outer deadline, which aborts the call with a timeout rather than a cancellation', async () => {
    const deadline: Middleware = async function deadline(ctx, next) {
      const controller = new AbortController()
      ctx.signal = controller.signal
      const inner = next()
      controller.abort(new ToolError('timeout', "Tool 'tool' timed out after 1s"))
      await inner
    }
    const t = breakerStack({}, [deadline])
    t.script.push('hang')
    expect((await t.stack.dispatch(call('1'))).error?.code).toBe('timeout')
    expect((await t.stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
  })

  it('rethrows a LoopError untouched and does not count it', async () => {
    const stop = new LoopError('budget_exhausted', 'no steps left')
    const t = breakerStack()
    t.script.push(stop)
    await expect(t.stack.dispatch(call('1'))).rejects.toBe(stop)
    const run = createRun({ maxSteps: 0 })
    await expect(t.stack.dispatch(call('2'), { run })).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'budget_exhausted')
    expect((await t.stack.dispatch(call('3'))).ok).toBe(true)
  })

  it('asks isFailure instead of the default, handing it the error and the context', async () => {
    const seen: string[] = []
    const t = breakerStack({
      isFailure: (error, ctx) => {
        seen.push('call' in ctx ? ctx.call.id : ctx.model.name)
        return ToolError.is(error) && error.code === 'not_found'
      },
    })
    t.script.push(new ToolError('timeout', 'slow'), new ToolError('not_found', 'gone'))
    expect((await t.stack.dispatch(call('1'))).error?.code).toBe('timeout')
    expect((await t.stack.dispatch(call('2'))).error?.code).toBe('not_found')
    expect((await t.stack.dispatch(call('3'))).error?.code).toBe('circuit_open')
    expect(seen).toEqual(['1', '2'])
  })

  it('keeps the original error and counts nothing when isFailure throws', async () => {
    const t = breakerStack({
      isFailure: () => {
        throw new Error('bug in the predicate')
      },
    })
    t.script.push(new ToolError('timeout', 'slow'))
    expect((await t.stack.dispatch(call('1'))).error?.code).toBe('timeout')
    expect((await t.stack.dispatch(call('2'))).ok).toBe(true)
  })

  it('exports the default predicate so a custom one can extend it', () => {
    expect(indictsTool(new ToolError('timeout', 'x'))).toBe(true)
    expect(indictsTool(new ToolError('not_found', 'x'))).toBe(false)
    expect(indictsTool('a string thrown by a tool')).toBe(true)
  })
})

describe('results of calls that started before the circuit opened', () => {
  it('cannot close a half-open circuit', async () => {
    const t = breakerStack({ cooldownMs: 1000 })
    let resolve = () => {}
    const early = new Promise<void>((r) => {
      resolve = r
    })
    let first = true
    const gate: Middleware = async function gate(_ctx, next) {
      if (first) {
        first = false
        await early
      }
      await next()
    }
    const stack = createStack({
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000 }), gate],
      tools: [t.tool],
      clock: t.clock,
    })
    const types: string[] = []
    stack.on((e) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!e.type.startsWith('call.')) types.push(e.type === 'circuit-breaker.state' ? `${e.from}->${e.to}` : e.type)
    })
    const slow = stack.dispatch(call('slow'))
    t.script.push(new ToolError('timeout', 'slow'), 'hang')
    expect((await stack.dispatch(call('1'))).error?.code).toBe('timeout')
    await t.clock.advance(1000)
    void stack.dispatch(call('probe'))
    await t.clock.advance(0)
    resolve()
    expect((await slow).ok).toBe(true)
    expect((await stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
    expect(types).toEqual([
      'circuit-breaker.failure',
      'closed->open',
      'open->half-open',
      'circuit-breaker.probe',
      'circuit-breaker.stale',
      'circuit-breaker.refused',
    ])
  })

  it('do not count once the circuit has closed again', async () => {
    const t = breakerStack({ policy: consecutive({ threshold: 2 }), cooldownMs: 1000 })
    t.script.push('hang')
    const controller = new AbortController()
    const early = t.stack.dispatch(call('early'), { signal: controller.signal })
    await t.clock.advance(0)
    t.script.push(new ToolError('timeout', 'a'), new ToolError('timeout', 'b'))
    await t.stack.dispatch(call('1'))
    await t.stack.dispatch(call('2'))
    await t.clock.advance(1000)
    expect((await t.stack.dispatch(call('probe'))).ok).toBe(true)
    // The early call now fails with a timeout of its own; it started under the old generation.
    const deadline = new ToolError('timeout', 'early one timed out')
    controller.abort(deadline)
    expect((await early).error?.code).toBe('timeout')
    t.script.push(new ToolError('timeout', 'c'))
    await t.stack.dispatch(call('3'))
    expect((await t.stack.dispatch(call('4'))).ok).toBe(true)
  })
})
