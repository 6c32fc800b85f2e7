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
  type ToolResult,
} from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type Backoff, constant, type RetryOptions, retry } from './index.js'

type Outcome = ToolError | 'ok'

/** A tool that answers from a script (the last entry repeats) and counts its executions. */
function scriptedTool(effect: ToolEffect, script: readonly Outcome[]) {
  const seen = { executions: 0, attempts: [] as number[], signals: [] as AbortSignal[], abortedWhileRunning: [] as boolean[] }
  const tool = defineTool({
    name: 'flaky',
    description: 'answers from a script',
    input: z.object({ q: z.string() }),
    effect,
    execute: (_args, { attempt, signal }) => {
      const outcome = script[Math.min(seen.executions, script.length - 1)] ?? 'ok'
      seen.executions++
      seen.attempts.push(attempt)
      seen.signals.push(signal)
      seen.abortedWhileRunning.push(signal.aborted)
      if (outcome === 'ok') return `done on call ${seen.executions}`
      throw outcome
    },
  })
  return { tool, seen }
}

const timeoutError = () => new ToolError('timeout', "Tool 'flaky' timed out after 5s")
const rateLimited = (retryAfterMs?: number) =>
  new ToolError('rate_limited', 'upstream answered 429', {
    safeToRepeat: true,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  })
const unavailable = () => new ToolError('upstream_error', 'upstream answered 503')
const call = { id: 'c1', name: 'flaky', args: { q: 'x' } }

function setup(effect: ToolEffect, script: readonly Outcome[], options?: RetryOptions | Backoff, extra: Middleware[] = []) {
  const clock = manualClock()
  const { tool, seen } = scriptedTool(effect, script)
  const stack = createStack({ middleware: [...extra, retry(options)], tools: [tool], clock, random: seededRandom(7) })
  const events: StackEvent[] = []
  stack.on((event) => {
    // The layers' own events; the stack's call.started / call.finished are asserted in core.
    if (!event.type.startsWith('call.')) events.push(event)
  })
  const dispatch = async (options?: Parameters<typeof stack.dispatch>[1]): Promise<ToolResult> => {
    const pending = stack.dispatch(call, options)
    let settled = false
    pending.then(
      () => (settled = true),
      () => (settled = true),
    )
    // Move virtual time until the call settles: every backoff sleep is on the manual clock.
    while (!settled) {
      if (clock.pending === 0) await new Promise<void>((resolve) => setImmediate(resolve))
      else await clock.runAll()
    }
    return pending
  }
  return { clock, stack, seen, events, dispatch }
}

describe('retry: counted executions through a real stack', () => {
  it('does not repeat a write tool that timed out (the world may have seen it): 1 execution', async () => {
    const { seen, dispatch } = setup('write', [timeoutError()])
    const result = await dispatch()
    expect(seen.executions).toBe(1)
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'timeout' } })
    expect(result.trace.map((e) => [e.type, e.reason])).toEqual([['retry.stopped', 'unsafe_write']])
  })

  it('repeats a write tool after a 429 (safeToRepeat) and succeeds', async () => {
    const { seen, dispatch } = setup('write', [rateLimited(), 'ok'])
    const result = await dispatch()
    expect(seen.executions).toBe(2)
    expect(result).toMatchObject({ ok: true, attempts: 2, value: 'done on call 2' })
  })

  it('repeats a write tool on 429 until maxAttempts, then returns the 429 soft: 3 executions', async () => {
    const { seen, dispatch } = setup('write', [rateLimited()])
    const result = await dispatch()
    expect(seen.executions).toBe(3)
    expect(result).toMatchObject({ ok: false, attempts: 3, error: { code: 'rate_limited' } })
  })

  it('retries a read tool that timed out once: 2 executions', async () => {
    const { seen, dispatch } = setup('read', [timeoutError()])
    const result = await dispatch()
    expect(seen.executions).toBe(2)
    expect(result).toMatchObject({ ok: false, attempts: 2, error: { code: 'timeout' } })
  })

  it('retries an idempotent tool that timed out once: 2 executions', async () => {
    const { seen, dispatch } = setup('idempotent', [timeoutError()])
    expect((await dispatch()).attempts).toBe(2)
    expect(seen.executions).toBe(2)
  })

  it('never repeats invalid_arguments from the tool: 1 execution, no retry event', async () => {
    const invalid = new ToolError('invalid_arguments', 'q must not be empty', { retryable: false, safeToRepeat: true })
    const { seen, dispatch } = setup('read', [invalid])
    const result = await dispatch()
    expect(seen.executions).toBe(1)
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'invalid_arguments', message: 'q must not be empty' } })
    expect(result.trace).toEqual([])
  })

  it('never repeats arguments the dispatcher refused: the terminal is reached once', async () => {
    let reached = 0
    const probe: Middleware = async function probe(_ctx, next) {
      reached++
      await next()
    }
    const clock = manualClock()
    const { tool, seen } = scriptedTool('read', ['ok'])
    const stack = createStack({ middleware: [retry(), probe], tools: [tool], clock })
    const result = await stack.dispatch({ id: 'c', name: 'flaky', args: { q: 42 } })
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'invalid_arguments' } })
    expect([reached, seen.executions]).toEqual([1, 0])
  })

  it('runs a never-stopping custom backoff exactly 6 times, then ends the run with recovery_exhausted', async () => {
    let asked = 0
    const forever: Backoff = {
      next: () => {
        asked++
        return 10
      },
    }
    const { seen, dispatch, events } = setup('read', [unavailable()], { backoff: forever, maxAttempts: Number.POSITIVE_INFINITY })
    const outcome = dispatch()
    await expect(outcome).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'recovery_exhausted')
    const error = (await outcome.catch((e: unknown) => e)) as LoopError
    expect(seen.executions).toBe(6)
    expect(seen.attempts).toEqual([1, 2, 3, 4, 5, 6])
    expect(asked).toBe(6)
    expect(error.details).toMatchObject({ attempts: 6, tool: 'flaky', lastError: { code: 'upstream_error' } })
    expect(events.filter((e) => e.type === 'retry.scheduled').map((e) => e.attempt)).toEqual([2, 3, 4, 5, 6])
    expect(events.at(-1)).toMatchObject({ type: 'retry.stopped', reason: 'recovery_ceiling', attempt: 6 })
  })

  it('hits the same ceiling with maxAttempts 100 and the default backoff', async () => {
    const { seen, dispatch } = setup('read', [unavailable()], { maxAttempts: 100 })
    await expect(dispatch()).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'recovery_exhausted')
    expect(seen.executions).toBe(6)
  })

  it('returns the error soft with attempts 6 when the policy itself stops at 6', async () => {
    const { seen, dispatch } = setup('read', [unavailable()], { maxAttempts: 6 })
    const result = await dispatch()
    expect(seen.executions).toBe(6)
    expect(result).toMatchObject({ ok: false, attempts: 6, error: { code: 'upstream_error', message: 'upstream answered 503' } })
  })

  it('returns the last error unedited, as the tool threw it, when the attempts failed in different ways', async () => {
    const { dispatch } = setup('read', [
      unavailable(),
      new ToolError('network_error', 'reset', { category: 'transient', retryable: true }),
      new ToolError('upstream_error', 'still 503', { hint: 'try later' }),
    ])
    const result = await dispatch()
    expect(result.error).toEqual({
      code: 'upstream_error',
      category: 'transient',
      message: 'still 503',
      hint: 'try later',
      retryable: true,
      safeToRepeat: false,
    })
  })

  it('says what the identical repeat will get: every attempt 503 drops retryAfterMs, and the repeat waits the service out', async () => {
    const busy = () => new ToolError('upstream_error', 'still 503', { hint: 'try later', retryAfterMs: 2000 })
    const { dispatch } = setup('read', [busy(), busy(), busy()])
    const result = await dispatch()
    expect(result.error).toEqual({
      code: 'upstream_error',
      category: 'transient',
      message: 'still 503',
      hint: expect.stringMatching(
        /failed all 3 attempts .* the identical call will wait 2 s and be sent once more\. Use another tool or source/,
      ),
      retryable: false,
      safeToRepeat: false,
    })
  })

  it('without pushback says how long the identical repeat will be answered from the failure', async () => {
    const down = () => new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
    const { dispatch } = setup('read', [down(), down(), down()])
    const result = await dispatch()
    expect(result.error?.hint).toMatch(/failed all 3 attempts .* the identical call will not be sent again for 2 s\. Use another tool/)
    expect(result.error?.retryAfterMs).toBeUndefined()
  })
})

describe('retry: the quickstart scene', () => {
  it('a flaky read tool fails twice with 503 and succeeds on the third attempt, after two jittered waits', async () => {
    const { seen, dispatch, clock } = setup('read', [unavailable(), unavailable(), 'ok'])
    const result = await dispatch()
    expect(result).toMatchObject({ ok: true, attempts: 3, value: 'done on call 3' })
    expect(seen.executions).toBe(3)
    const delays = result.trace.filter((e) => e.type === 'retry.scheduled').map((e) => e.delayMs as number)
    expect(delays).toHaveLength(2)
    expect(delays[0]).toBeLessThanOrEqual(500)
    expect(delays[1]).toBeLessThanOrEqual(1000)
    expect(clock.now()).toBeCloseTo((delays[0] ?? 0) + (delays[1] ?? 0), 6)
  })
})

describe('retry: policy', () => {
  it('honours maxAttempts and perCode overrides', async () => {
    const a = setup('read', [unavailable()], { maxAttempts: 2 })
    await a.dispatch()
    expect(a.seen.executions).toBe(2)
    const b = setup('read', [timeoutError()], { perCode: { timeout: { maxAttempts: 4 } } })
    await b.dispatch()
    expect(b.seen.executions).toBe(4)
    const c = setup('read', [timeoutError()], { maxAttempts: 1 })
    await c.dispatch()
    expect(c.seen.executions).toBe(1)
  })

  it('accepts the policy as plain data, and a backoff object alone', async () => {
    const data = setup('read', [unavailable()], { backoff: 'exponential', baseMs: 100, capMs: 1000, maxAttempts: 4 })
    await data.dispatch()
    expect(data.events.filter((e) => e.type === 'retry.scheduled').map((e) => e.delayMs)).toEqual([100, 200, 400])
    const object = setup('read', [unavailable()], constant(7))
    await object.dispatch()
    expect(object.events.filter((e) => e.type === 'retry.scheduled').map((e) => e.delayMs)).toEqual([7, 7])
  })

  it('does not retry at all with backoff none', async () => {
    const { seen, dispatch } = setup('read', [unavailable()], { backoff: 'none' })
    expect(await dispatch()).toMatchObject({ attempts: 1 })
    expect(seen.executions).toBe(1)
  })

  it('passes the previous delay to the backoff and the attempt number to the tool', async () => {
    const previous: Array<number | undefined> = []
    const spy: Backoff = {
      next: (attempt, _error, _random, previousMs) => {
        previous.push(previousMs)
        return attempt * 100
      },
    }
    const { seen, dispatch } = setup('read', [unavailable()], spy)
    await dispatch()
    expect(previous).toEqual([undefined, 100])
    expect(seen.attempts).toEqual([1, 2, 3])
  })

  it('rejects bad options at construction, naming the option', () => {
    expect(() => retry({ maxAttempts: 0 })).toThrow(OptionsError)
    expect(() => retry({ maxAttempts: 0 })).toThrow('retry(): option maxAttempts')
    expect(() => retry({ maxAttempts: Number.NaN })).toThrow('option maxAttempts')
    expect(() => retry({ baseMs: -1 })).toThrow('option baseMs')
    expect(() => retry({ baseMs: 9000, capMs: 1000 })).toThrow('option baseMs: must not exceed capMs (1000)')
    expect(() => retry({ maxElapsedMs: Number.NaN })).toThrow('option maxElapsedMs')
    expect(() => retry({ backoff: 'fulljitter' as 'none' })).toThrow("option backoff: must be one of 'full-jitter'")
    expect(() => retry({ backoff: 'fulljitter' as 'none' })).toThrow("did you mean 'full-jitter'?")
    expect(() => retry({ backoff: constant(5), capMs: 100 })).toThrow('option capMs: has no effect with a backoff object')
    expect(() => retry({ perCode: { Timeout: { maxAttempts: 2 } } })).toThrow('option perCode.Timeout')
    expect(() => retry({ retryBudget: {} as never })).toThrow('option retryBudget')
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    retry()
    const options = { maxAttempts: 2, baseMs: 100 }
    retry(options)
    options.maxAttempts = 0
    expect(() => retry(options)).toThrow('retry(): option maxAttempts')
    options.maxAttempts = 2
    options.baseMs = 9000
    expect(() => retry(options)).toThrow('option baseMs: must not exceed capMs (8000) ')
    expect(() => retry(JSON.parse('{"__proto__": {"maxAttempts": 9}}'))).toThrow('unknown option "__proto__"')
    expect(() => retry()).not.toThrow()
  })
})

describe('retry: retryAfterMs and maxElapsedMs', () => {
  it('waits at least retryAfterMs', async () => {
    const { dispatch, events, clock } = setup('write', [rateLimited(3000), 'ok'])
    const result = await dispatch()
    expect(result.ok).toBe(true)
    const scheduled = events.find((e) => e.type === 'retry.scheduled')
    expect(scheduled?.delayMs).toBe(3000)
    expect(clock.now()).toBe(3000)
  })

  it('does not wait out a retryAfterMs above the cap: the 429 goes back at once, with retryAfterMs', async () => {
    const { seen, dispatch, clock } = setup('write', [rateLimited(20_000), 'ok'])
    const result = await dispatch()
    expect(seen.executions).toBe(1)
    expect(clock.now()).toBe(0)
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'rate_limited', retryAfterMs: 20_000 } })
    expect(result.trace).toMatchObject([{ type: 'retry.stopped', reason: 'retry_after_too_long', code: 'rate_limited' }])
  })

  it('does not wait out a retryAfterMs longer than the time maxElapsedMs leaves', async () => {
    const { seen, dispatch } = setup('write', [rateLimited(3000), 'ok'], { maxElapsedMs: 2000 })
    expect(await dispatch()).toMatchObject({ ok: false, error: { code: 'rate_limited', retryAfterMs: 3000 } })
    expect(seen.executions).toBe(1)
  })

  it('stops before a wait that would end past maxElapsedMs', async () => {
    const { seen, dispatch, events, clock } = setup('read', [unavailable()], {
      backoff: 'exponential',
      baseMs: 1000,
      maxAttempts: 5,
      maxElapsedMs: 2500,
    })
    const result = await dispatch()
    expect(seen.executions).toBe(2)
    expect(clock.now()).toBe(1000)
    expect(result.attempts).toBe(2)
    expect(events.at(-1)).toMatchObject({ type: 'retry.stopped', reason: 'max_elapsed' })
  })
})

describe('retry: cancellation', () => {
  it('ends the run as cancelled within a tick when aborted 50 ms into a 10 s backoff; no further call, no pending sleeper', async () => {
    let asked = 0
    const tenSeconds: Backoff = {
      next: () => {
        asked++
        return 10_000
      },
    }
    const { clock, stack, seen, events } = setup('read', [unavailable(), 'ok'], tenSeconds)
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const pending = stack.dispatch(call, { run })
    await clock.advance(50)
    expect([seen.executions, clock.pending, clock.now()]).toEqual([1, 1, 50])
    expect(events.map((e) => [e.type, e.delayMs])).toEqual([['retry.scheduled', 10_000]])

    controller.abort()
    const oneTick = new Promise((resolve) => setImmediate(() => resolve('still pending after a tick')))
    const outcome = await Promise.race([
      pending.then(
        () => 'resolved',
        (e: unknown) => e,
      ),
      oneTick,
    ])
    expect(outcome).toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(clock.pending).toBe(0)

    await clock.advance(60_000)
    expect([seen.executions, asked]).toEqual([1, 1])
  })

  it('leaves no timer behind on the real clock when aborted during a backoff', async () => {
    vi.useFakeTimers()
    try {
      const { tool, seen } = scriptedTool('read', [unavailable(), 'ok'])
      const stack = createStack({ middleware: [retry(constant(10_000))], tools: [tool] })
      const controller = new AbortController()
      const pending = stack.dispatch(call, { signal: controller.signal })
      const outcome = pending.catch((e: unknown) => e)
      await vi.advanceTimersByTimeAsync(50)
      expect(vi.getTimerCount()).toBe(1)
      controller.abort()
      expect(await outcome).toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
      expect(vi.getTimerCount()).toBe(0)
      await vi.advanceTimersByTimeAsync(20_000)
      expect(seen.executions).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it('does not retry when the run was cancelled while the attempt ran', async () => {
    const controller = new AbortController()
    const { tool, seen } = scriptedTool('read', [unavailable()])
    const cancelling = defineTool({
      ...tool,
      execute: (args, context) => {
        controller.abort()
        return tool.execute(args, context)
      },
    })
    const stack = createStack({ middleware: [retry()], tools: [cancelling], clock: manualClock() })
    await expect(stack.dispatch(call, { run: createRun({ signal: controller.signal }) })).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'cancelled',
    )
    expect(seen.executions).toBe(1)
  })
})

describe('retry: the step budget', () => {
  it('spends one step per attempt (the terminal spends it, retry does not spend twice)', async () => {
    const { dispatch } = setup('read', [unavailable(), unavailable(), 'ok'])
    const run = createRun({ maxSteps: 10 })
    expect(await dispatch({ run })).toMatchObject({ ok: true, attempts: 3 })
    expect(run.budget.used).toBe(3)
  })

  it('ends the run with budget_exhausted instead of sleeping toward an attempt it cannot pay for', async () => {
    const { seen, dispatch, events, clock } = setup('read', [unavailable()], { maxAttempts: 5 })
    const run = createRun({ maxSteps: 2 })
    const outcome = dispatch({ run })
    await expect(outcome).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'budget_exhausted')
    expect(seen.executions).toBe(2)
    expect(events.map((e) => e.type)).toEqual(['retry.scheduled', 'retry.stopped'])
    expect(events.at(-1)).toMatchObject({ reason: 'step_budget' })
    expect(clock.pending).toBe(0)
  })
})

describe('retry: the layer contract', () => {
  it('rethrows a non-ToolError untouched, without repeating', async () => {
    const crash = new RangeError('boom')
    let seenByOuter: unknown
    const outer: Middleware = async function outer(_ctx, next) {
      try {
        await next()
      } catch (err) {
        seenByOuter = err
        throw err
      }
    }
    const { seen, dispatch } = setup('read', [crash as unknown as ToolError], undefined, [outer])
    await expect(dispatch()).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'tool_crashed')
    expect(seenByOuter).toBe(crash)
    expect(seen.executions).toBe(1)
  })

  it('rethrows a LoopError untouched, without repeating', async () => {
    const stop = new LoopError('loop_detected', 'same failing call five times')
    let inner = 0
    const detector: Middleware = async function detector() {
      inner++
      throw stop
    }
    const stack = createStack({ middleware: [retry(), detector], tools: [scriptedTool('read', ['ok']).tool], clock: manualClock() })
    await expect(stack.dispatch(call)).rejects.toBe(stop)
    expect(inner).toBe(1)
  })

  it('repeats with the signal it was given even when an inner layer swapped ctx.signal, and clears ctx.result', async () => {
    const resultsSeen: unknown[] = []
    const sloppyTimeout: Middleware = async function sloppyTimeout(ctx, next) {
      resultsSeen.push(ctx.result)
      if (ctx.attempt === 1) {
        // A layer that swaps the signal for its deadline and forgets to restore it.
        const deadline = new AbortController()
        ctx.signal = deadline.signal
        deadline.abort()
        ctx.result = { value: 'stale' }
        throw new ToolError('timeout', "Tool 'flaky' timed out after 5s")
      }
      await next()
    }
    const clock = manualClock()
    const { tool, seen: toolSeen } = scriptedTool('read', ['ok'])
    const stack = createStack({ middleware: [retry(), sloppyTimeout], tools: [tool], clock })
    const pending = stack.dispatch(call)
    await clock.runAll()
    expect(await pending).toMatchObject({ ok: true, attempts: 2 })
    expect(toolSeen.executions).toBe(1)
    expect(toolSeen.abortedWhileRunning).toEqual([false])
    expect(resultsSeen).toEqual([undefined, undefined])
  })

  it('shows each scheduled retry on the trace and in the log', async () => {
    const lines: Array<[object, string | undefined]> = []
    const logger = {
      debug: () => {},
      info: (obj: object, msg?: string) => void lines.push([obj, msg]),
      warn: () => {},
      error: () => {},
      child: () => logger,
    }
    const clock = manualClock()
    const { tool } = scriptedTool('read', [unavailable(), new ToolError('network_error', 'connection reset'), 'ok'])
    const stack = createStack({ middleware: [retry({ backoff: 'exponential' })], tools: [tool], clock, logger })
    const pending = stack.dispatch(call)
    await clock.runAll()
    const result = await pending
    expect(result.trace).toMatchObject([
      { type: 'retry.scheduled', attempt: 2, delayMs: 500, code: 'upstream_error', at: 0 },
      { type: 'retry.scheduled', attempt: 3, delayMs: 1000, code: 'network_error', at: 500 },
    ])
    expect(lines.filter(([, msg]) => msg === 'retrying tool call').map(([obj]) => obj)).toEqual([
      { attempt: 2, delayMs: 500, code: 'upstream_error' },
      { attempt: 3, delayMs: 1000, code: 'network_error' },
    ])
  })
})

describe('retry: what retry.scheduled tells a person waiting', () => {
  const withStatus = (status: unknown, retryAfterMs?: number) =>
    new ToolError('rate_limited', 'upstream answered 429', {
      safeToRepeat: true,
      details: { status },
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    })

  it("names the attempts allowed for the code, the server's Retry-After and the classifier's HTTP status", async () => {
    const { dispatch, events } = setup('read', [withStatus(429, 1500), unavailable(), 'ok'], {
      maxAttempts: 4,
      perCode: { rate_limited: { maxAttempts: 6 } },
    })
    expect(await dispatch()).toMatchObject({ ok: true, attempts: 3 })
    const [first, second] = events.filter((e) => e.type === 'retry.scheduled')
    expect(first).toMatchObject({ attempt: 2, maxAttempts: 6, delayMs: 1500, retryAfterMs: 1500, status: 429, code: 'rate_limited' })
    expect(second).toMatchObject({ attempt: 3, maxAttempts: 4, code: 'upstream_error' })
    expect(second).not.toHaveProperty('retryAfterMs')
    expect(second).not.toHaveProperty('status')
  })

  it.each([
    ['NaN', Number.NaN],
    ['a string', '429'],
    ['a fraction', 429.5],
    ['an object', { toString: () => '429' }],
  ])('leaves status out when details.status is %s', async (_name, bad) => {
    const { dispatch, events } = setup('read', [withStatus(bad), 'ok'])
    await dispatch()
    const scheduled = events.find((e) => e.type === 'retry.scheduled')
    expect(scheduled).toMatchObject({ attempt: 2, maxAttempts: 3, code: 'rate_limited' })
    expect(scheduled).not.toHaveProperty('status')
  })
})
