import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createRun,
  createStack,
  DEFAULT_ORDER,
  defaultMiddleware,
  defineTool,
  LoopError,
  type Middleware,
  MiddlewareUsageError,
  OptionsError,
} from './index.js'

const Original = globalThis.AbortController
let created = 0
class CountingAbortController extends Original {
  constructor() {
    super()
    created++
  }
}

afterEach(() => {
  globalThis.AbortController = Original
})

function tools() {
  const quiet = defineTool({
    name: 'quiet',
    description: 'Ignores its signal',
    input: z.object({ n: z.number() }),
    effect: 'read',
    execute: ({ n }) => n,
  })
  const listening = defineTool({
    name: 'listening',
    description: 'Reads its signal',
    input: z.object({ n: z.number() }),
    effect: 'read',
    execute: ({ n }, { signal }) => (signal.aborted ? -1 : n),
  })
  return [quiet, listening]
}

describe('defaultMiddleware()', () => {
  it('builds the seven layers in the recommended order, and leaves out the ones set to false', () => {
    expect(DEFAULT_ORDER).toEqual(['panicCatcher', 'stuckLoop', 'idempotency', 'circuitBreaker', 'retry', 'errorClassifier', 'timeout'])
    expect(defaultMiddleware().map((layer) => layer.name)).toEqual([
      'panicCatcher',
      'stuckLoop',
      'idempotency',
      'circuitBreaker',
      'retry',
      'errorClassifier',
      'timeout',
    ])
    expect(defaultMiddleware({ retry: false, idempotency: false })).toHaveLength(5)
  })

  it('rejects a bad option of any layer at construction, naming it', () => {
    expect(() => defaultMiddleware({ timeout: { ms: -5 } })).toThrow(OptionsError)
    expect(() => defaultMiddleware({ timeout: { ms: -5 } })).toThrow(/ms/)
  })

  it('rejects a misspelt layer name with the nearest layer, instead of leaving that layer at its defaults', () => {
    const call = () => defaultMiddleware({ timeOut: { ms: 10 } } as never)
    expect(call).toThrow(OptionsError)
    expect(call).toThrow(`defaultMiddleware(): unknown option "timeOut"; did you mean 'timeout'?`)
    expect(() => defaultMiddleware({ circutBreaker: false } as never)).toThrow(/did you mean 'circuitBreaker'\?/)
    expect(() => defaultMiddleware({ cache: {} } as never)).toThrow(/unknown option "cache"; known options: panicCatcher, stuckLoop/)
  })

  it('rejects a layer given something other than options or false, and options that are not an object', () => {
    expect(() => defaultMiddleware({ retry: true } as never)).toThrow(
      "defaultMiddleware(): option retry: expected the layer's options object, or false to leave it out (got true)",
    )
    expect(() => defaultMiddleware({ timeout: [5] } as never)).toThrow(/option timeout: expected the layer's options object/)
    expect(() => defaultMiddleware('fast' as never)).toThrow(OptionsError)
    expect(() => defaultMiddleware(JSON.parse('{"__proto__":{"timeout":false}}'))).toThrow(/unknown option "__proto__"/)
  })

  it("passes a layer's misspelt option to that layer, which suggests the key it meant", () => {
    expect(() => defaultMiddleware({ timeout: { millis: 5 } } as never)).toThrow(`timeout(): unknown option "millis"; did you mean 'ms'?`)
    expect(() => defaultMiddleware({ retry: { maxAttempt: 2 } } as never)).toThrow(
      /^retry\(\): unknown option "maxAttempt"; did you mean 'maxAttempts'\?/,
    )
  })

  it('creates no AbortController on the happy path unless the tool reads its signal', async () => {
    const stack = createStack({ middleware: defaultMiddleware(), tools: tools() })
    globalThis.AbortController = CountingAbortController
    created = 0
    for (let n = 0; n < 100; n++) expect((await stack.dispatch({ id: `q${n}`, name: 'quiet', args: { n } })).ok).toBe(true)
    expect(created).toBe(0)
    for (let n = 0; n < 10; n++) expect((await stack.dispatch({ id: `l${n}`, name: 'listening', args: { n } })).value).toBe(n)
    expect(created).toBe(10)
  })
})

describe('arguments the guard refuses, repeated', () => {
  it('are refused by stuck-loop and then stop the run, while the tool never runs', async () => {
    let ran = 0
    const save = defineTool({
      name: 'save',
      description: 'Saves a note',
      input: z.object({ text: z.string() }),
      effect: 'write',
      execute: () => {
        ran++
        return 'saved'
      },
    })
    const stack = createStack({ middleware: defaultMiddleware(), tools: [save] })
    const run = createRun()
    const broken = () => stack.dispatch({ id: 'c', name: 'save', args: '{"text": "unterminated' }, { run })
    expect((await broken()).error?.code).toBe('invalid_arguments')
    expect((await broken()).error?.code).toBe('invalid_arguments')
    expect((await broken()).error?.code).toBe('repeated_failure')
    expect((await broken()).error?.code).toBe('repeated_failure')
    await expect(broken()).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'loop_detected')
    expect(ran).toBe(0)
  })
})

describe('the default stack under compose’s one guard', () => {
  it('hands a second next() at once, from a layer inside all seven, out as the LoopError naming that layer; the tool runs once', async () => {
    let runs = 0
    const count = defineTool({ name: 'count', description: 'Counts its runs', input: z.object({}), effect: 'read', execute: () => ++runs })
    const twice: Middleware = async function twice(_ctx, next) {
      const first = next()
      await next()
      await first
    }
    const stack = createStack({ tools: [count], middleware: [...defaultMiddleware(), twice] })
    const failure = await stack.dispatch({ id: 'c1', name: 'count', args: {} }).then(
      () => undefined,
      (err: unknown) => err,
    )
    expect(LoopError.is(failure)).toBe(true)
    expect((failure as LoopError).cause).toBeInstanceOf(MiddlewareUsageError)
    expect((failure as LoopError).cause).toHaveProperty('message', expect.stringContaining('middleware "twice" called next() while'))
    expect(runs).toBe(1)
  })
})
