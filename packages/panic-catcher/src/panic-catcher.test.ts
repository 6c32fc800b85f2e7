import {
  createRun,
  createStack,
  defineTool,
  type Logger,
  LoopError,
  type Middleware,
  OptionsError,
  type StackEvent,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type PanicCatcherOptions, panicCatcher } from './index.js'
import { DEFAULT_PANIC_HINT } from './panic-catcher.js'

const TRUNCATION_MARKER = /… \[truncated from \d+ chars\]$/

const call = { id: 'call-7', name: 'boom', args: {} }

function throwing(thrown: () => unknown) {
  return defineTool({
    name: 'boom',
    description: 'throws',
    input: z.object({}),
    execute: () => {
      throw thrown()
    },
  })
}

function spyLogger() {
  const bindings: Record<string, unknown>[] = []
  const errors: [Record<string, unknown>, string | undefined][] = []
  const make = (bound: Record<string, unknown>): Logger => ({
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (obj, msg) => errors.push([{ ...bound, ...(obj as Record<string, unknown>) }, msg]),
    child: (more) => {
      bindings.push(more)
      return make({ ...bound, ...more })
    },
  })
  return { logger: make({}), bindings, errors }
}

async function panicOf(thrown: () => unknown, options?: PanicCatcherOptions): Promise<ToolResult> {
  const stack = createStack({ tools: [throwing(thrown)], middleware: [panicCatcher(options)] })
  return stack.dispatch(call)
}

function circular() {
  const value: Record<string, unknown> = { message: 'went round in circles' }
  value.self = value
  value.cause = value
  return value
}

function deepCauses(depth: number) {
  let error = new Error('level 0')
  for (let i = 1; i <= depth; i++) error = new Error(`level ${i}`, { cause: error })
  return error
}

const hostileProxy = () =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('get trap')
      },
      has: () => {
        throw new Error('has trap')
      },
      getPrototypeOf: () => {
        throw new Error('getPrototypeOf trap')
      },
      ownKeys: () => {
        throw new Error('ownKeys trap')
      },
      getOwnPropertyDescriptor: () => {
        throw new Error('getOwnPropertyDescriptor trap')
      },
    },
  )

const revokedProxy = () => {
  const { proxy, revoke } = Proxy.revocable(new Error('revoked'), {})
  revoke()
  return proxy
}

class QuotaError extends Error {
  override name = 'QuotaError'
}
class PlainSubclass extends Error {}

const throwables: [string, () => unknown, string][] = [
  ['an Error', () => new Error('disk full'), 'disk full'],
  [
    'a TypeError',
    () => new TypeError("Cannot read properties of undefined (reading 'id')"),
    "TypeError: Cannot read properties of undefined (reading 'id')",
  ],
  ['a RangeError', () => new RangeError('Maximum call stack size exceeded'), 'RangeError: Maximum call stack size exceeded'],
  ['an Error subclass with its own name', () => new QuotaError('over quota'), 'QuotaError: over quota'],
  ['an Error subclass keeping the name Error', () => new PlainSubclass('subclassed'), 'subclassed'],
  [
    'an AggregateError',
    () => new AggregateError([new Error('a failed'), 'b failed', null, new Error('d failed')], 'all failed'),
    'AggregateError: all failed (4 errors: a failed; b failed; (unknown payload); …)',
  ],
  ['an AggregateError with no errors', () => new AggregateError([], 'nothing inside'), 'AggregateError: nothing inside'],
  ['a DOMException', () => new DOMException('The operation was aborted', 'AbortError'), 'AbortError: The operation was aborted'],
  ['an Error with an empty message', () => new Error(''), '(unknown payload)'],
  ['a string', () => 'something broke', 'something broke'],
  ['an empty string', () => '', '(unknown payload)'],
  ['a number', () => 42, '42'],
  ['NaN', () => Number.NaN, 'NaN'],
  ['a boolean', () => false, 'false'],
  ['null', () => null, '(unknown payload)'],
  ['undefined', () => undefined, '(unknown payload)'],
  ['a symbol', () => Symbol('kaboom'), 'Symbol(kaboom)'],
  ['a bigint', () => 10n ** 20n, '100000000000000000000n'],
  [
    'a function (its source is never shown)',
    () =>
      function leak() {
        return 'SECRET-IN-SOURCE'
      },
    '(unknown payload)',
  ],
  ['an arrow function', () => () => 'SECRET-IN-SOURCE', '(unknown payload)'],
  ['a plain object without a message', () => ({ code: 'E_FAIL', token: 'SECRET' }), '(unknown payload)'],
  ['a plain object with a message', () => ({ message: 'quota exceeded' }), 'quota exceeded'],
  ['an error-shaped plain object', () => ({ name: 'HttpError', message: 'bad gateway' }), 'HttpError: bad gateway'],
  ['a plain object with a non-error name', () => ({ name: 'alice', message: 'hello' }), 'hello'],
  ['an object without a prototype', () => Object.create(null), '(unknown payload)'],
  ['an array', () => ['a', 'b'], '(unknown payload)'],
  ['a circular object', circular, 'went round in circles'],
  ['an Error whose message is not a string', () => Object.assign(new Error('x'), { message: { nested: true } }), '(unknown payload)'],
  [
    'an object whose message getter throws',
    () => ({
      get message(): string {
        throw new Error('getter exploded')
      },
    }),
    '(unknown payload)',
  ],
  [
    'an Error whose message getter throws',
    () =>
      Object.defineProperty(new TypeError('hidden'), 'message', {
        get() {
          throw new Error('getter exploded')
        },
      }),
    '(unknown payload)',
  ],
  [
    'an Error whose name getter throws',
    () =>
      Object.defineProperty(new Error('still readable'), 'name', {
        get() {
          throw new Error('getter exploded')
        },
      }),
    'still readable',
  ],
  ['a Proxy that throws on every trap', hostileProxy, '(unknown payload)'],
  ['a revoked Proxy', revokedProxy, '(unknown payload)'],
  ['a 10,000-deep cause chain', () => deepCauses(10_000), 'level 10000'],
  ['a promise', () => Promise.resolve('not awaited'), '(unknown payload)'],
]

describe('panicCatcher(): every odd throwable becomes tool_panic', () => {
  it.each(throwables)('%s', async (_label, thrown, text) => {
    const result = await panicOf(thrown)
    expect(result.ok).toBe(false)
    expect(result.error).toEqual({
      code: 'tool_panic',
      category: 'recoverable',
      message: `Tool "boom" panicked: ${text}`,
      hint: DEFAULT_PANIC_HINT,
      retryable: false,
      safeToRepeat: false,
    })
    expect(result.content).not.toContain('SECRET')
  })

  it('catches what an inner middleware throws, not only the tool', async () => {
    const broken: Middleware = async function broken() {
      throw new TypeError('layer bug')
    }
    const ok = defineTool({ name: 'boom', description: '', input: z.object({}), execute: () => 'fine' })
    const stack = createStack({ tools: [ok], middleware: [panicCatcher(), broken] })
    expect((await stack.dispatch(call)).error?.message).toBe('Tool "boom" panicked: TypeError: layer bug')
  })

  it('passes a ToolError through untouched', async () => {
    const original = new ToolError('not_found', 'file src/mian.rs not found', { hint: 'list the directory first' })
    let seen: unknown
    const spy: Middleware = async function spy(_ctx, next) {
      try {
        await next()
      } catch (err) {
        seen = err
        throw err
      }
    }
    const stack = createStack({ tools: [throwing(() => original)], middleware: [spy, panicCatcher()] })
    const result = await stack.dispatch(call)
    expect(seen).toBe(original)
    expect(result.error).toEqual(original.toJSON())
  })

  it('passes a LoopError through untouched', async () => {
    const original = new LoopError('budget_exhausted', 'no steps left')
    await expect(panicOf(() => original)).rejects.toBe(original)
  })

  it('turns a cancelled run into LoopError cancelled, not a panic, and logs no panic', async () => {
    const parent = new AbortController()
    const { logger, errors } = spyLogger()
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const waits = defineTool({
      name: 'boom',
      description: '',
      input: z.object({}),
      execute: (_args, { signal }) => {
        started()
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('socket closed'))))
      },
    })
    const stack = createStack({ tools: [waits], logger, middleware: [panicCatcher()] })
    const pending = stack.dispatch(call, { run: createRun({ signal: parent.signal }) })
    await running
    parent.abort()
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
    expect(errors).toEqual([])
  })
})

describe('panicCatcher(): the stack goes to the log, never to the model', () => {
  it('logs the name, stack and causes at error level, with the run and call from the child logger', async () => {
    const { logger, bindings, errors } = spyLogger()
    const thrown = new TypeError('bad input', { cause: new Error('root cause') })
    const stack = createStack({ tools: [throwing(() => thrown)], logger, middleware: [panicCatcher()] })
    const run = createRun({ id: 'run-1' })
    const result = await stack.dispatch(call, { run })
    expect(bindings).toContainEqual(expect.objectContaining({ runId: 'run-1', callId: 'call-7', tool: 'boom' }))
    expect(errors).toHaveLength(1)
    const [fields, message] = errors[0] ?? [{}, undefined]
    expect(message).toBe('Tool "boom" panicked: TypeError: bad input')
    expect(fields).toMatchObject({
      runId: 'run-1',
      callId: 'call-7',
      attempt: 1,
      panic: { name: 'TypeError', stack: thrown.stack, causes: ['root cause'] },
    })
    expect(thrown.stack).toMatch(/\n\s+at /)
    expect(result.content).not.toMatch(/\bat .*:\d+:\d+/)
    expect(result.content).not.toContain('root cause')
  })

  it('keeps stack frames and control characters a library pasted into its message away from the model', async () => {
    const message = 'request failed\n    at Client.send (/home/alice/app/node_modules/x/index.js:10:5)\n\u001b[31mred\u001b[0m\u0007 text'
    const result = await panicOf(() => new Error(message))
    expect(result.error?.message).toBe('Tool "boom" panicked: request failed\nred text')
  })

  it('logs at most eight causes of a 10,000-deep chain', async () => {
    const { logger, errors } = spyLogger()
    const stack = createStack({ tools: [throwing(() => deepCauses(10_000))], logger, middleware: [panicCatcher()] })
    await stack.dispatch(call)
    expect(errors[0]?.[0]).toMatchObject({
      panic: {
        causes: ['level 9999', 'level 9998', 'level 9997', 'level 9996', 'level 9995', 'level 9994', 'level 9993', 'level 9992', '…'],
      },
    })
  })

  it('logs a circular cause chain once around', async () => {
    const { logger, errors } = spyLogger()
    const a = new Error('a')
    const b = new Error('b', { cause: a })
    ;(a as { cause?: unknown }).cause = b
    const stack = createStack({ tools: [throwing(() => a)], logger, middleware: [panicCatcher()] })
    await stack.dispatch(call)
    expect(errors[0]?.[0]).toMatchObject({ panic: { causes: ['b'] } })
  })

  it('emits each panic as an event', async () => {
    const stack = createStack({ tools: [throwing(() => new RangeError('too far'))], middleware: [panicCatcher()] })
    const events: StackEvent[] = []
    stack.on((event) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!event.type.startsWith('call.')) events.push(event)
    })
    const result = await stack.dispatch(call)
    expect(events).toEqual([
      expect.objectContaining({
        type: 'panic-catcher.caught',
        callId: 'call-7',
        tool: 'boom',
        name: 'RangeError',
        payload: 'error',
        message: 'Tool "boom" panicked: RangeError: too far',
      }),
    ])
    expect(result.trace.map((e) => e.type)).toEqual(['panic-catcher.caught'])
  })
})

describe('panicCatcher(): text size', () => {
  it('caps the message at 500 characters by default, with a visible marker', async () => {
    const result = await panicOf(() => new Error('x'.repeat(100_000)))
    const message = result.error?.message ?? ''
    expect(message.length).toBe(500)
    expect(message.startsWith('Tool "boom" panicked: xxx')).toBe(true)
    expect(message).toMatch(TRUNCATION_MARKER)
  })

  it('honours maxMessageLength', async () => {
    const result = await panicOf(() => 'y'.repeat(1000), { maxMessageLength: 120 })
    expect(result.error?.message).toHaveLength(120)
    expect(result.error?.message).toMatch(TRUNCATION_MARKER)
  })

  it('never cuts a character in half', async () => {
    for (let shift = 0; shift < 4; shift++) {
      const result = await panicOf(() => `${'a'.repeat(shift)}${'😀'.repeat(400)}`)
      expect(result.error?.message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
    }
  })

  it('answers any thrown value with a capped, well-formed tool_panic (property)', async () => {
    const stack = createStack({
      tools: [
        defineTool({ name: 'boom', description: '', input: z.object({ i: z.number() }), execute: ({ i }) => Promise.reject(pool[i]) }),
      ],
      middleware: [panicCatcher()],
    })
    const pool: unknown[] = []
    const thrownValue = fc.oneof(
      fc.anything({ withBigInt: true, withNullPrototype: true, withObjectString: true }),
      fc.string({ unit: 'binary', maxLength: 3000 }).map((s) => new Error(s)),
      fc.string({ unit: 'binary', maxLength: 3000 }),
    )
    await fc.assert(
      fc.asyncProperty(thrownValue, async (thrown) => {
        pool.push(thrown)
        const result = await stack.dispatch({ id: 'p', name: 'boom', args: { i: pool.length - 1 } })
        if (ToolError.is(thrown) || LoopError.is(thrown)) return
        expect(result.error?.code).toBe('tool_panic')
        const message = result.error?.message ?? ''
        expect(message.startsWith('Tool "boom" panicked: ')).toBe(true)
        expect(message.length).toBeLessThanOrEqual(500)
        // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting that control characters never reach the model
        expect(message).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F]/)
      }),
      { numRuns: 300 },
    )
  })
})

describe('panicCatcher() options', () => {
  it('runs redact over the text before the model reads it', async () => {
    const result = await panicOf(() => new Error('auth failed for sk-live-abcdef123456'), {
      redact: (text) => text.replace(/sk-[\w-]+/g, '[redacted]'),
    })
    expect(result.error?.message).toBe('Tool "boom" panicked: auth failed for [redacted]')
  })

  it('withholds the text when redact throws', async () => {
    const result = await panicOf(() => new Error('sk-live-abcdef123456'), {
      redact: () => {
        throw new Error('scrubber bug')
      },
    })
    expect(result.error?.message).toBe('Tool "boom" panicked: (message withheld: redaction failed)')
  })

  it('takes a hint of its own, or none', async () => {
    expect((await panicOf(() => 'x', { hint: 'report this to the user' })).error?.hint).toBe('report this to the user')
    expect((await panicOf(() => 'x', { hint: false })).error).not.toHaveProperty('hint')
  })

  it.each([
    [{ maxMessageLength: 10 }, 'option maxMessageLength'],
    [{ maxMessageLength: 5000 }, 'option maxMessageLength'],
    [{ hint: '' }, 'option hint'],
    [{ redact: 'scrub' }, 'option redact'],
    [{ maxLength: 100 }, 'maxLength'],
  ])('refuses %j at construction, naming the option', (options, named) => {
    expect(() => panicCatcher(options as never)).toThrow(OptionsError)
    expect(() => panicCatcher(options as never)).toThrow(named)
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    panicCatcher()
    const options = { maxMessageLength: 200 }
    panicCatcher(options)
    options.maxMessageLength = 10
    expect(() => panicCatcher(options)).toThrow(/^panicCatcher\(\): option maxMessageLength: .*\(got 10\)$/)
    expect(() => panicCatcher(JSON.parse('{"__proto__": {"hint": false}}'))).toThrow(/unknown option "__proto__"/)
    expect(() => panicCatcher()).not.toThrow()
  })
})

describe('panicCatcher() and a broken onion', () => {
  it('lets a MiddlewareUsageError through, so the run ends as tool_crashed instead of hiding the bug as a soft panic', async () => {
    const twice: Middleware = async function twice(_ctx, next) {
      void next()
      await next()
    }
    const tool = defineTool({ name: 'noop', description: '', input: z.object({}), effect: 'read', execute: () => 'ok' })
    const stack = createStack({ middleware: [panicCatcher(), twice], tools: [tool] })
    await expect(stack.dispatch({ id: 'c', name: 'noop', args: {} })).rejects.toSatisfy(
      (e: unknown) =>
        LoopError.is(e) && e.kind === 'tool_crashed' && /next\(\) while its previous next\(\) was still pending/.test(e.message),
    )
  })
})
