import { createStack, defineTool, LoopError, OptionsError, type StackEvent, ToolError, type ToolResult } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { constant, exponential, type RetryAttemptInfo, type RetryGiveUpInfo, type RetryOptions, retry, retryDefinition } from './index.js'

const unavailable = () => new ToolError('upstream_error', 'upstream answered 503')
const call = { id: 'c1', name: 'status_page', args: { region: 'eu' } }

/** A read tool that fails `failures` times, then answers; every execution is counted with its clock time. */
function setup(options: RetryOptions, failures = 10) {
  const clock = manualClock()
  const ran: number[] = []
  const tool = defineTool({
    name: 'status_page',
    description: 'Read the status page',
    input: z.object({ region: z.string() }),
    effect: 'read',
    execute: () => {
      ran.push(clock.now())
      if (ran.length <= failures) throw unavailable()
      return 'all systems operational'
    },
  })
  const errors: unknown[] = []
  const logger = {
    level: 'info',
    child: () => logger,
    info: () => {},
    debug: () => {},
    trace: () => {},
    warn: (o: unknown) => errors.push(o),
    error: (o: unknown) => errors.push(o),
    fatal: () => {},
  }
  const stack = createStack({ middleware: [retry(options)], tools: [tool], clock, random: seededRandom(3), logger: logger as never })
  const events: StackEvent[] = []
  stack.on((e) => {
    if (e.type.startsWith('retry.')) events.push(e)
  })
  /** Runs the call to its end, moving virtual time as far as the call needs. */
  const dispatch = async (signal?: AbortSignal): Promise<ToolResult> => {
    const pending = stack.dispatch(call, signal === undefined ? {} : { signal })
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
  return { clock, stack, ran, events, errors, dispatch }
}

const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
process.on('unhandledRejection', onUnhandled)
afterEach(() => {
  expect(unhandled).toEqual([])
})

/** Answers a hook may give that throw when anything reads them. */
const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}
const throwingDelay = () => ({
  get delayMs(): number {
    throw new Error('delay getter bug')
  },
})
const trapping = () =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('get trap bug')
      },
      getOwnPropertyDescriptor: () => {
        throw new Error('descriptor trap bug')
      },
    },
  )
const throwingThen = () => ({
  // biome-ignore lint/suspicious/noThenProperty: the case is exactly an answer whose `then` throws when read
  get then(): never {
    throw new Error('then getter bug')
  },
})
const throwingConstructor = () => {
  const promise = Promise.resolve(undefined)
  Object.defineProperty(promise, 'constructor', {
    get() {
      throw new Error('constructor getter bug')
    },
  })
  return promise
}
describe('retry onRetry', () => {
  it('is awaited before each repeat with the failed attempt and the planned delay, in order', async () => {
    const seen: string[] = []
    const { dispatch, ran } = setup(
      {
        backoff: constant(100),
        maxAttempts: 3,
        onRetry: async (info: RetryAttemptInfo) => {
          seen.push(`attempt ${info.attempt} ${info.error.code} wait ${info.delayMs} (${info.tool}/${info.callId})`)
        },
      },
      2,
    )
    expect(await dispatch()).toMatchObject({ ok: true, attempts: 3 })
    expect(seen).toEqual(['attempt 1 upstream_error wait 100 (status_page/c1)', 'attempt 2 upstream_error wait 100 (status_page/c1)'])
    expect(ran).toEqual([0, 100, 200])
  })

  it('waits at least the delay it answers, never less than the policy planned', async () => {
    const answers = [{ delayMs: 1500 }, { delayMs: 10 }]
    const backoff = exponential({ baseMs: 100, capMs: 2000 })
    const { dispatch, ran, events } = setup({ backoff, maxAttempts: 3, onRetry: () => answers.shift() }, 2)
    expect(await dispatch()).toMatchObject({ ok: true, attempts: 3 })
    expect(ran).toEqual([0, 1500, 1700])
    expect(events.map((e) => [e.type, e.delayMs])).toEqual([
      ['retry.scheduled', 1500],
      ['retry.scheduled', 200],
    ])
  })

  it("answers 'stop': the error goes back to the model now, onGiveUp hears hook_stop", async () => {
    const gaveUp: RetryGiveUpInfo[] = []
    const { dispatch, ran, events } = setup({ onRetry: () => 'stop', onGiveUp: (info) => void gaveUp.push(info) })
    expect(await dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    expect(ran).toHaveLength(1)
    expect(events.map((e) => [e.type, e.reason, e.why])).toEqual([['retry.stopped', 'hook_stop', 'answered stop']])
    expect(gaveUp.map((g) => [g.reason, g.attempt, g.error.code])).toEqual([['hook_stop', 1, 'upstream_error']])
  })

  it('that throws (or rejects) stops retrying with the last error, logged, and nothing rejects unhandled', async () => {
    for (const onRetry of [
      () => {
        throw new Error('hook bug')
      },
      async () => {
        throw new Error('async hook bug')
      },
    ]) {
      const { dispatch, ran, events, errors } = setup({ onRetry })
      expect(await dispatch()).toMatchObject({
        ok: false,
        attempts: 1,
        error: { code: 'upstream_error', message: 'upstream answered 503' },
      })
      expect(ran).toHaveLength(1)
      expect(events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', 'hook threw']])
      expect(errors).toEqual([expect.objectContaining({ hook: 'onRetry', err: expect.any(Error) })])
    }
  })

  it('that never settles is given up on after hookTimeoutMs: the call ends, nothing is left waiting', async () => {
    const { dispatch, ran, events, clock } = setup({ hookTimeoutMs: 2000, onRetry: () => new Promise(() => {}) })
    expect(await dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    expect(clock.now()).toBe(2000)
    expect(clock.pending).toBe(0)
    expect(ran).toHaveLength(1)
    expect(events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', 'hook did not settle in 2000 ms']])
  })

  it('that never settles ends as cancelled the moment the run is cancelled', async () => {
    const controller = new AbortController()
    const { stack, clock } = setup({ onRetry: () => new Promise(() => {}) })
    const pending = stack.dispatch(call, { signal: controller.signal })
    await clock.advance(500)
    controller.abort()
    await expect(pending).rejects.toSatisfy(LoopError.is)
    await expect(pending).rejects.toMatchObject({ kind: 'cancelled' })
    expect(clock.pending).toBe(0)
  })

  it('is not called once the run is cancelled, nor is the tool called again', async () => {
    const controller = new AbortController()
    const onRetry = vi.fn()
    const clock = manualClock()
    let runs = 0
    const tool = defineTool({
      name: 'status_page',
      description: 'Read the status page',
      input: z.object({ region: z.string() }),
      effect: 'read',
      execute: () => {
        runs++
        controller.abort() // the run is cancelled while the attempt fails
        throw unavailable()
      },
    })
    const stack = createStack({ middleware: [retry({ onRetry })], tools: [tool], clock })
    await expect(stack.dispatch(call, { signal: controller.signal })).rejects.toMatchObject({ kind: 'cancelled' })
    expect(onRetry).not.toHaveBeenCalled()
    expect(runs).toBe(1)
  })

  it.each([
    [{ delayMs: Number.NaN }, 'answered delayMs NaN, not a finite number of ms >= 0'],
    [{ delayMs: -5 }, 'answered delayMs -5, not a finite number of ms >= 0'],
    [{ delayMs: Number.POSITIVE_INFINITY }, 'answered delayMs Infinity, not a finite number of ms >= 0'],
    [{ delayMs: '100' }, "answered delayMs '100', not a finite number of ms >= 0"],
    [{ delayMs: 9_000 }, 'asked to wait 9000 ms, more than the 8000 ms allowed'],
    [{ delayMs: 1e15 }, 'asked to wait 1000000000000000 ms, more than the 8000 ms allowed'],
    ['later', "answered 'later', not undefined, 'stop' or { delayMs }"],
    [42, "answered 42, not undefined, 'stop' or { delayMs }"],
    [[], "answered an array, not undefined, 'stop' or { delayMs }"],
  ])('reads a bad answer %j as stop, and says why', async (answer, why) => {
    const { dispatch, ran, events, errors } = setup({ onRetry: () => answer as never })
    expect(await dispatch()).toMatchObject({ ok: false, attempts: 1 })
    expect(ran).toHaveLength(1)
    expect(events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', why]])
    expect(errors).toEqual([expect.objectContaining({ why })])
  })

  it.each([
    ['a delayMs getter that throws', throwingDelay, 'answer threw when read'],
    ['a revoked Proxy', revoked, 'hook threw'],
    ['a Proxy whose traps throw', trapping, 'hook threw'],
    ['a thenable whose then getter throws', throwingThen, 'hook threw'],
    ['a promise whose constructor getter throws', throwingConstructor, 'hook threw'],
    ['a promise of a delayMs getter that throws', async () => throwingDelay(), 'answer threw when read'],
    ['a promise of a revoked Proxy', async () => revoked(), 'hook threw'],
  ])('that answers %s stops with the last soft error, logged, never a crash', async (_, onRetry, why) => {
    const { dispatch, ran, events, errors } = setup({ onRetry: onRetry as never })
    expect(await dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error', message: 'upstream answered 503' } })
    expect(ran).toHaveLength(1)
    expect(events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', why]])
    expect(errors).toEqual([expect.objectContaining({ hook: 'onRetry', err: expect.any(Error) })])
  })

  it('that answers a revoked Proxy to every one of parallel calls stops each one softly', async () => {
    const { stack, clock, ran } = setup({ onRetry: (() => revoked()) as never })
    const results = await Promise.all(['a', 'b', 'c'].map((id) => stack.dispatch({ ...call, id })))
    expect(results.map((r) => [r.ok, r.error?.code])).toEqual([
      [false, 'upstream_error'],
      [false, 'upstream_error'],
      [false, 'upstream_error'],
    ])
    expect(ran).toHaveLength(3)
    expect(clock.pending).toBe(0)
  })

  it('may not ask for a wait past what maxElapsedMs leaves, nor past the backoff’s cap (as retryAfterMs may not)', async () => {
    const elapsed = setup({ backoff: 'full-jitter', maxElapsedMs: 1000, onRetry: () => ({ delayMs: 1500 }) })
    expect((await elapsed.dispatch()).ok).toBe(false)
    expect(elapsed.events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', 'asked to wait 1500 ms, more than the 1000 ms allowed']])
    const capped = setup({ backoff: constant(100), onRetry: () => ({ delayMs: 101 }) })
    expect((await capped.dispatch()).ok).toBe(false)
    expect(capped.events.map((e) => [e.reason, e.why])).toEqual([['hook_stop', 'asked to wait 101 ms, more than the 100 ms allowed']])
  })
})

describe('retry onGiveUp', () => {
  it('is awaited once with the final error and the reason, and cannot change the outcome', async () => {
    const order: string[] = []
    const { dispatch, ran } = setup({
      backoff: constant(10),
      maxAttempts: 2,
      onGiveUp: async (info) => {
        order.push(`gave up after ${info.attempt}: ${info.reason}`)
        await new Promise<void>((resolve) => setImmediate(resolve))
        order.push('hook done')
      },
    })
    const result = await dispatch()
    order.push('call ended')
    expect(result).toMatchObject({ ok: false, attempts: 2, error: { code: 'upstream_error' } })
    expect(ran).toHaveLength(2)
    expect(order).toEqual(['gave up after 2: max_attempts', 'hook done', 'call ended'])
  })

  it('that throws or hangs leaves the outcome as it was', async () => {
    const throwing = setup({
      maxAttempts: 1,
      onGiveUp: () => {
        throw new Error('listener bug')
      },
    })
    expect(await throwing.dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    const hanging = setup({ maxAttempts: 1, hookTimeoutMs: 50, onGiveUp: () => new Promise<void>(() => {}) })
    expect(await hanging.dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    expect(hanging.clock.now()).toBe(50)
  })

  it.each([
    ['a revoked Proxy', revoked],
    ['a thenable whose then getter throws', throwingThen],
    ['a promise whose constructor getter throws', throwingConstructor],
  ])('that answers %s leaves the outcome as it was', async (_, onGiveUp) => {
    const { dispatch, errors } = setup({ maxAttempts: 1, onGiveUp: onGiveUp as never })
    expect(await dispatch()).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    expect(errors).toEqual([expect.objectContaining({ hook: 'onGiveUp', err: expect.any(Error) })])
  })

  it('hears a hard stop before the run ends: the recovery ceiling', async () => {
    const reasons: string[] = []
    const { dispatch } = setup({ backoff: constant(1), maxAttempts: 100, onGiveUp: (info) => void reasons.push(info.reason) })
    await expect(dispatch()).rejects.toMatchObject({ kind: 'recovery_exhausted' })
    expect(reasons).toEqual(['recovery_ceiling'])
  })

  it('is not called for an error retry never considers (not retryable)', async () => {
    const onGiveUp = vi.fn()
    const clock = manualClock()
    const tool = defineTool({
      name: 'status_page',
      description: 'x',
      input: z.object({ region: z.string() }),
      effect: 'read',
      execute: () => {
        throw new ToolError('not_found', 'no such region')
      },
    })
    const stack = createStack({ middleware: [retry({ onGiveUp })], tools: [tool], clock })
    expect((await stack.dispatch(call)).error?.code).toBe('not_found')
    expect(onGiveUp).not.toHaveBeenCalled()
  })
})

describe('hook options', () => {
  it('must be functions, and a config file cannot hold them', () => {
    expect(() => retry({ onRetry: 'stop' as never })).toThrow(OptionsError)
    expect(() => retry({ onRetry: 'stop' as never })).toThrow(/onRetry: must be a function/)
    expect(() => retry({ onGiveUp: {} as never })).toThrow(/onGiveUp: must be a function/)
    for (const bad of [0, -1, 1.5, Number.NaN, 600_001]) expect(() => retry({ hookTimeoutMs: bad })).toThrow(/hookTimeoutMs/)
    expect(() => retryDefinition.build({ onRetry: 'stop' } as never)).toThrow(/onRetry/)
    expect(() => retryDefinition.build({ hookTimeoutMs: 100 } as never)).toThrow(/hookTimeoutMs/)
  })
})
