// biome-ignore-all lint/suspicious/noThenProperty: classifier rules are { match, then } data
import { createRun, createStack, defineTool, type Logger, LoopError, type Middleware, OptionsError, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ErrorClassifierOptions, errorClassifier } from './index.js'

function toolThrowing(thrown: () => unknown) {
  return defineTool({
    name: 'fetch_page',
    description: 'Fetch a page',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      throw thrown()
    },
  })
}

/** An outer layer that records what the classifier threw, then rethrows it. */
function recorder(seen: unknown[]): Middleware {
  return async function recorder(_ctx, next) {
    try {
      await next()
    } catch (err) {
      seen.push(err)
      throw err
    }
  }
}

async function dispatchThrowing(thrown: () => unknown, options?: ErrorClassifierOptions) {
  const seen: unknown[] = []
  // These tests read the soft error the classifier made; the stack's escalation policy would end the run on `user`/`fatal`.
  const stack = createStack({
    middleware: [recorder(seen), errorClassifier(options)],
    tools: [toolThrowing(thrown)],
    escalate: { fatal: false, user: false },
  })
  const result = await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
  return { result, thrown: seen[0] }
}

const withStatus = (status: number, message = 'request failed') => Object.assign(new Error(message), { status })
const errno = (code: string, message = `connect ${code} 93.184.216.34:443`) => Object.assign(new Error(message), { code })

class APIError extends Error {
  readonly status: number
  readonly headers: Headers | Record<string, string>
  constructor(status: number, message: string, headers: Headers | Record<string, string>) {
    super(message)
    this.status = status
    this.headers = headers
  }
}
class RateLimitError extends APIError {}
class InternalServerError extends APIError {}

type Row = readonly [
  row: string,
  thrown: () => unknown,
  expected: { code: string; category: string; retryable: boolean; safeToRepeat: boolean },
]
const invalid = { code: 'invalid_arguments', category: 'recoverable', retryable: false, safeToRepeat: false }
// The service refused the request (decision 405): nothing was processed, so even a write may be repeated.
const refused = { code: 'invalid_arguments', category: 'recoverable', retryable: false, safeToRepeat: true }
const upstream = { code: 'upstream_error', category: 'transient', retryable: true, safeToRepeat: false }
const neverConnected = { code: 'network_error', category: 'transient', retryable: true, safeToRepeat: true }
const connectionLost = { code: 'network_error', category: 'transient', retryable: true, safeToRepeat: false }
const panic = { code: 'tool_panic', category: 'recoverable', retryable: false, safeToRepeat: false }

const table: Row[] = [
  ['400 on `status`', () => withStatus(400), refused],
  ['422 on `statusCode`', () => Object.assign(new Error('unprocessable'), { statusCode: 422 }), refused],
  [
    '401 on `response.status`',
    () => Object.assign(new Error('nope'), { response: { status: 401 } }),
    { code: 'auth_required', category: 'user', retryable: false, safeToRepeat: true },
  ],
  [
    '403 as a thrown fetch Response',
    () => new Response('forbidden', { status: 403 }),
    { code: 'permission_denied', category: 'fatal', retryable: false, safeToRepeat: true },
  ],
  ['404 on `status`', () => withStatus(404), { code: 'not_found', category: 'recoverable', retryable: false, safeToRepeat: true }],
  [
    '408 on `response.statusCode`',
    () => Object.assign(new Error('slow'), { response: { statusCode: 408 } }),
    { code: 'timeout', category: 'transient', retryable: true, safeToRepeat: true },
  ],
  ['409 on `status`', () => withStatus(409), { code: 'conflict', category: 'recoverable', retryable: false, safeToRepeat: true }],
  [
    '429 from an OpenAI-style RateLimitError with Headers',
    () => new RateLimitError(429, '429 Rate limit reached', new Headers()),
    { code: 'rate_limited', category: 'transient', retryable: true, safeToRepeat: true },
  ],
  [
    '429 from an Anthropic-style error with plain headers',
    () => new APIError(429, 'rate_limit_error', { 'x-request-id': 'r1' }),
    { code: 'rate_limited', category: 'transient', retryable: true, safeToRepeat: true },
  ],
  ['500 from an SDK InternalServerError', () => new InternalServerError(500, '500 oops', {}), upstream],
  ['502 as a thrown fetch Response', () => new Response(null, { status: 502 }), upstream],
  ['503 on `status`', () => withStatus(503), upstream],
  [
    '503 with Retry-After',
    () => Object.assign(new Error('unavailable'), { status: 503, headers: { 'retry-after': '2' } }),
    { ...upstream, safeToRepeat: true },
  ],
  ['504 on `statusCode` as a string', () => Object.assign(new Error('gateway'), { statusCode: '504' }), upstream],
  ['other 4xx (418)', () => withStatus(418), { code: 'http_error', category: 'recoverable', retryable: false, safeToRepeat: false }],
  ['other 5xx (507)', () => withStatus(507), upstream],
  ['ECONNREFUSED', () => errno('ECONNREFUSED'), neverConnected],
  ['ENOTFOUND', () => errno('ENOTFOUND', 'getaddrinfo ENOTFOUND api.example.com'), neverConnected],
  ['EAI_AGAIN', () => errno('EAI_AGAIN'), neverConnected],
  ['UND_ERR_CONNECT_TIMEOUT', () => errno('UND_ERR_CONNECT_TIMEOUT', 'Connect Timeout Error'), neverConnected],
  [
    'a certificate that fails verification: nothing sent, and no wait mends it',
    () => new TypeError('fetch failed', { cause: errno('CERT_HAS_EXPIRED', 'certificate has expired') }),
    { code: 'certificate_error', category: 'user', retryable: false, safeToRepeat: true },
  ],
  [
    'a TLS handshake that timed out before sending: it heals',
    () => new TypeError('fetch failed', { cause: errno('ERR_TLS_HANDSHAKE_TIMEOUT', 'TLS handshake timeout') }),
    neverConnected,
  ],
  ['ECONNRESET', () => errno('ECONNRESET', 'read ECONNRESET'), connectionLost],
  ['EPIPE', () => errno('EPIPE', 'write EPIPE'), connectionLost],
  ['ETIMEDOUT', () => errno('ETIMEDOUT'), connectionLost],
  ['UND_ERR_HEADERS_TIMEOUT', () => errno('UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'), connectionLost],
  ['UND_ERR_BODY_TIMEOUT', () => errno('UND_ERR_BODY_TIMEOUT', 'Body Timeout Error'), connectionLost],
  ['fetch failed with ECONNREFUSED on its cause', () => new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }), neverConnected],
  [
    'fetch failed with an AggregateError cause (happy eyeballs)',
    () => new TypeError('fetch failed', { cause: new AggregateError([errno('ECONNREFUSED')], 'connect failed') }),
    neverConnected,
  ],
  ['fetch failed with a codeless cause', () => new TypeError('fetch failed', { cause: new Error('other side closed') }), connectionLost],
  [
    'AbortError DOMException',
    () => new DOMException('This operation was aborted', 'AbortError'),
    { code: 'cancelled', category: 'recoverable', retryable: false, safeToRepeat: false },
  ],
  [
    'TimeoutError DOMException',
    () => new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
    { code: 'timeout', category: 'transient', retryable: true, safeToRepeat: false },
  ],
  ['ZodError thrown inside the tool', () => z.object({ id: z.string() }).safeParse({ id: 1 }).error, invalid],
  ['TypeError from tool code', () => new TypeError("Cannot read properties of undefined (reading 'id')"), panic],
  ['ReferenceError from tool code', () => new ReferenceError('resp is not defined'), panic],
  ['RangeError from tool code', () => new RangeError('Invalid array length'), panic],
]

describe('errorClassifier', () => {
  it.each(table)('classifies %s', async (_row, thrown, expected) => {
    const { result } = await dispatchThrowing(thrown)
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject(expected)
  })

  it('lists each issue of a ZodError thrown inside a tool', async () => {
    const { result } = await dispatchThrowing(
      () => z.object({ id: z.string(), qty: z.number().int() }).safeParse({ id: 1, qty: 1.5 }).error,
    )
    expect(result.error?.message).toMatch(/^Invalid arguments for fetch_page: id: .+; qty: .+/)
  })

  it('words a tool bug the way panicCatcher does, with the error name', async () => {
    const { result } = await dispatchThrowing(() => new TypeError("Cannot read properties of undefined (reading 'id')"))
    expect(result.error?.message).toBe(`Tool "fetch_page" panicked: TypeError: Cannot read properties of undefined (reading 'id')`)
  })

  it('logs the stack of a tool bug at error level, since panicCatcher will not see it', async () => {
    const entries: Array<{ level: string; obj: object }> = []
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (obj) => entries.push({ level: 'error', obj }),
      child: () => logger,
    }
    const bug = new TypeError('x is not a function')
    const stack = createStack({ middleware: [errorClassifier()], tools: [toolThrowing(() => bug)], logger })
    await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(entries).toEqual([{ level: 'error', obj: { err: bug, code: 'tool_panic' } }])
  })

  it('names the HTTP status and reason when the error text does not', async () => {
    const { result } = await dispatchThrowing(() => new Response('x', { status: 404, statusText: 'Not Found' }))
    expect(result.error?.message).toBe('HTTP 404 Not Found')
  })

  it("adds an HTTP client's response body message", async () => {
    const { result } = await dispatchThrowing(() =>
      Object.assign(new Error('Request failed with status code 409'), {
        response: { status: 409, data: { error: { message: 'version is 7, not 6' } } },
      }),
    )
    expect(result.error?.message).toBe('Request failed with status code 409 (version is 7, not 6)')
  })

  it('keeps the cause chain in the text so the model sees why fetch failed', async () => {
    const { result } = await dispatchThrowing(
      () => new TypeError('fetch failed', { cause: errno('ECONNREFUSED', 'connect ECONNREFUSED 10.1.2.3:443') }),
    )
    expect(result.content).toContain('fetch failed: connect ECONNREFUSED [redacted]:443')
  })

  it('leaves a throwable no rule recognises to panicCatcher, unchanged', async () => {
    const boom = new Error('boom')
    const seen: unknown[] = []
    const events: string[] = []
    const stack = createStack({ middleware: [recorder(seen), errorClassifier()], tools: [toolThrowing(() => boom)] })
    stack.on((event) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!event.type.startsWith('call.')) events.push(event.type)
    })
    await expect(stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'tool_crashed' && e.cause === boom,
    )
    expect(seen).toEqual([boom])
    expect(seen[0]).toBe(boom)
    expect(events).toEqual(['error-classifier.unclassified'])
  })

  it('rethrows a LoopError untouched', async () => {
    const hard = new LoopError('fatal', 'disk full at /home/alice')
    const stack = createStack({ middleware: [errorClassifier()], tools: [toolThrowing(() => hard)] })
    await expect(stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })).rejects.toBe(hard)
  })

  it('passes a clean ToolError through as the same instance', async () => {
    const soft = new ToolError('not_found', 'file src/mian.rs not found', { hint: 'list the directory first' })
    const { result, thrown } = await dispatchThrowing(() => soft)
    expect(thrown).toBe(soft)
    expect(result.content).toBe('{"error":"not_found","message":"file src/mian.rs not found","hint":"list the directory first"}')
  })

  it("redacts a ToolError's message and hint, keeping every other field and the original as cause", async () => {
    const soft = new ToolError('upstream_error', 'GET http://admin:hunter2@10.0.0.5/api failed', {
      hint: 'ask the owner of /home/alice',
      retryAfterMs: 1000,
      safeToRepeat: true,
      details: { host: 'a' },
    })
    const { result, thrown } = await dispatchThrowing(() => soft)
    expect(result.error).toEqual({
      code: 'upstream_error',
      category: 'transient',
      message: 'GET http://[redacted]@[redacted]/api failed',
      hint: 'ask the owner of [redacted]',
      retryable: true,
      safeToRepeat: true,
      retryAfterMs: 1000,
    })
    expect(ToolError.is(thrown) && thrown.cause).toBe(soft)
    expect(ToolError.is(thrown) && thrown.details).toEqual({ host: 'a' })
  })

  it('passes ToolErrors through untouched when sanitizeToolErrors is false, and the stack still redacts what the model reads', async () => {
    const soft = new ToolError('upstream_error', 'failed at 10.0.0.5')
    const seen: unknown[] = []
    const stack = createStack({
      middleware: [recorder(seen), errorClassifier({ sanitizeToolErrors: false })],
      tools: [toolThrowing(() => soft)],
    })
    const result = await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(seen[0]).toBe(soft)
    expect(result.error?.message).toBe('failed at [redacted]')
  })

  it('ends the run with cancellation when the run is cancelled and the tool throws AbortError', async () => {
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const seen: unknown[] = []
    const stack = createStack({
      middleware: [recorder(seen), errorClassifier()],
      tools: [
        toolThrowing(() => {
          controller.abort()
          return new DOMException('This operation was aborted', 'AbortError')
        }),
      ],
    })
    await expect(stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} }, { run })).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'cancelled',
    )
    // The classifier itself answers with core's cancellation, not a soft `cancelled` for a layer above to retry.
    expect(seen).toHaveLength(1)
    expect(LoopError.is(seen[0]) && seen[0].kind).toBe('cancelled')
  })

  it('rethrows the run signal reason itself when the run was cancelled with a LoopError', async () => {
    const controller = new AbortController()
    const reason = new LoopError('cancelled', 'the user pressed Ctrl-C')
    const seen: unknown[] = []
    const stack = createStack({
      middleware: [recorder(seen), errorClassifier()],
      tools: [
        toolThrowing(() => {
          controller.abort(reason)
          return errno('ECONNRESET')
        }),
      ],
    })
    await expect(
      stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} }, { run: createRun({ signal: controller.signal }) }),
    ).rejects.toBe(reason)
    expect(seen).toEqual([reason])
  })

  it("answers with an outer layer's deadline error when that layer aborted the call's signal", async () => {
    const deadline = new ToolError('timeout', "Tool 'fetch_page' timed out after 5s")
    const outerDeadline: Middleware = async function outerDeadline(ctx, next) {
      const controller = new AbortController()
      ctx.signal = controller.signal
      controller.abort(deadline)
      await next()
    }
    const tool = defineTool({
      name: 'fetch_page',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: (_args, { signal }) => {
        if (signal.aborted) throw new DOMException('This operation was aborted', 'AbortError')
        return 'page'
      },
    })
    // The terminal refuses an already-aborted signal itself, so run the tool through a layer that skips that check.
    const direct: Middleware = async function direct(ctx) {
      await tool.execute({}, { call: ctx.call, signal: ctx.signal, idempotencyKey: undefined, attempt: 1, log: ctx.log })
    }
    const stack = createStack({ middleware: [outerDeadline, errorClassifier(), direct], tools: [tool] })
    const result = await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(result.error).toMatchObject({ code: 'timeout', message: "Tool 'fetch_page' timed out after 5s" })
  })

  it('runs user rules before the built-ins, and the first matching rule wins', async () => {
    const options: ErrorClassifierOptions = {
      rules: [
        {
          id: 'orders_404',
          match: { status: 404, messageIncludes: 'ORDER' },
          then: { code: 'no_such_order', category: 'recoverable', hint: 'ids look like ORD-2026-NNNNN' },
        },
        { id: 'any_404', match: { status: 404 }, then: { code: 'gone_fishing', category: 'recoverable' } },
      ],
    }
    const order = await dispatchThrowing(() => withStatus(404, 'order ORD-1 not found'), options)
    expect(order.result.error).toMatchObject({ code: 'no_such_order', hint: 'ids look like ORD-2026-NNNNN' })
    const other = await dispatchThrowing(() => withStatus(404, 'user not found'), options)
    expect(other.result.error?.code).toBe('gone_fishing')
    const builtin = await dispatchThrowing(() => withStatus(429), options)
    expect(builtin.result.error?.code).toBe('rate_limited')
  })

  it('matches user rules on codes and names anywhere they appear, and on messages case-insensitively', async () => {
    const options: ErrorClassifierOptions = {
      builtins: false,
      rules: [
        { match: { code: 'E_QUOTA' }, then: { code: 'quota_exceeded', category: 'user' } },
        { match: { name: 'StripeCardError' }, then: { code: 'card_declined', category: 'user', retryable: false } },
        { match: { messageIncludes: ['read-only mode'] }, then: { code: 'read_only', category: 'transient', safeToRepeat: true } },
      ],
    }
    class StripeCardError extends Error {}
    const quota = await dispatchThrowing(
      () => new Error('outer', { cause: Object.assign(new Error('inner'), { code: 'E_QUOTA' }) }),
      options,
    )
    expect(quota.result.error).toMatchObject({ code: 'quota_exceeded', category: 'user', retryable: false })
    const card = await dispatchThrowing(() => new StripeCardError('declined'), options)
    expect(card.result.error?.code).toBe('card_declined')
    const readOnly = await dispatchThrowing(() => 'Database is in READ-ONLY MODE', options)
    expect(readOnly.result.error).toMatchObject({
      code: 'read_only',
      retryable: true,
      safeToRepeat: true,
      message: 'Database is in READ-ONLY MODE',
    })
  })

  it('uses only user rules when builtins is false', async () => {
    const seen = await dispatchThrowing(() => withStatus(500), { builtins: false, rules: [] }).catch((e: unknown) => e)
    expect(LoopError.is(seen) && seen.kind).toBe('tool_crashed')
  })

  it('emits error-classifier.classified with the rule that matched', async () => {
    const events: unknown[] = []
    const stack = createStack({ middleware: [errorClassifier()], tools: [toolThrowing(() => withStatus(503))] })
    stack.on(({ at: _at, runId: _runId, ...event }) => {
      if (!event.type.startsWith('call.')) events.push(event)
    })
    await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(events).toEqual([
      {
        type: 'error-classifier.classified',
        callId: 'c1',
        tool: 'fetch_page',
        code: 'upstream_error',
        category: 'transient',
        retryable: true,
        safeToRepeat: false,
        rule: 'http_5xx',
        status: 503,
      },
    ])
  })

  it('emits error-classifier.sanitized when it rewrites a ToolError', async () => {
    const events: string[] = []
    const stack = createStack({
      middleware: [errorClassifier()],
      tools: [toolThrowing(() => new ToolError('conflict', 'row locked by 192.168.1.9'))],
    })
    stack.on((event) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!event.type.startsWith('call.')) events.push(event.type)
    })
    const result = await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(result.error?.message).toBe('row locked by [redacted]')
    expect(events).toEqual(['error-classifier.sanitized'])
  })

  it('rejects bad options at construction, naming the option and the value', () => {
    expect(() => errorClassifier({ rules: [{ match: { status: 404 }, then: { code: 'x', category: 'meh' as 'user' } }] })).toThrow(
      OptionsError,
    )
    expect(() => errorClassifier({ rules: [{ match: { status: 404 }, then: { code: 'x', category: 'meh' as 'user' } }] })).toThrow(
      /option rules\[0\]\.then\.category: .*\(got "meh"\)/,
    )
    expect(() => errorClassifier({ maxLength: 5 })).toThrow(/option maxLength/)
    const changed = { maxLength: 300 }
    errorClassifier(changed)
    changed.maxLength = 5
    expect(() => errorClassifier(changed)).toThrow(/^errorClassifier\(\): option maxLength: .*\(got 5\)$/)
    expect(() => errorClassifier(JSON.parse('{"__proto__": {"builtins": false}}'))).toThrow(/unknown option "__proto__"/)
    expect(() => errorClassifier({ rules: [{ match: { statuz: 404 } as never, then: { code: 'x', category: 'user' } }] })).toThrow(/statuz/)
    expect(() => errorClassifier({ now: 5 as never })).toThrow(/option now: must be a function/)
    expect(() => errorClassifier({ wallNow: 5 as never })).toThrow(/option wallNow: must be a function/)
    expect(() => errorClassifier({ wallNow: Date.now, now: Date.now })).toThrow(/option now: is the deprecated name of wallNow/)
  })

  it('changes nothing on success', async () => {
    const echo = defineTool({ name: 'echo', description: '', input: z.object({ s: z.string() }), effect: 'read', execute: ({ s }) => s })
    const stack = createStack({ middleware: [errorClassifier()], tools: [echo] })
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { s: 'sk-not-a-secret-but-output-is-not-ours' } })
    expect(result).toMatchObject({ ok: true, content: 'sk-not-a-secret-but-output-is-not-ours', trace: [] })
  })
})

describe('errorClassifier with Retry-After', () => {
  const now = () => Date.parse('Wed, 21 Oct 2026 07:28:00 GMT')

  it('turns a 429 with Retry-After seconds into retryAfterMs the model reads', async () => {
    const { result } = await dispatchThrowing(() => new RateLimitError(429, '429 slow down', new Headers({ 'Retry-After': '7' })))
    expect(result.error).toMatchObject({ code: 'rate_limited', retryAfterMs: 7000 })
    expect(result.content).toBe(
      '{"error":"rate_limited","message":"429 slow down","hint":"wait before calling this tool again","retryAfterMs":7000}',
    )
  })

  it('reads an HTTP date against the injected wall clock', async () => {
    const thrown = () => new Response(null, { status: 503, headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT' } })
    const { result } = await dispatchThrowing(thrown, { wallNow: now })
    expect(result.error).toMatchObject({ code: 'upstream_error', retryAfterMs: 30_000 })
    // The deprecated name of wallNow still works.
    expect((await dispatchThrowing(thrown, { now })).result.error?.retryAfterMs).toBe(30_000)
  })

  it('clamps a date a year out to maxRetryAfterMs', async () => {
    const thrown = () => withStatusAndHeaders(429, { 'retry-after': 'Thu, 21 Oct 2027 07:28:00 GMT' })
    expect((await dispatchThrowing(thrown, { now })).result.error?.retryAfterMs).toBe(60_000)
    expect((await dispatchThrowing(thrown, { now, maxRetryAfterMs: 5000 })).result.error?.retryAfterMs).toBe(5000)
  })

  it.each(['-1', 'abc', '1e309', 'Tue, 20 Oct 2026 07:28:00 GMT', ''])('ignores Retry-After %j', async (value) => {
    const { result } = await dispatchThrowing(() => withStatusAndHeaders(429, { 'Retry-After': value }), { now })
    expect(result.error?.code).toBe('rate_limited')
    expect(result.error?.retryAfterMs).toBeUndefined()
  })

  it('prefers retry-after-ms, as OpenAI and Anthropic send it', async () => {
    const { result } = await dispatchThrowing(() => new APIError(429, 'slow', { 'retry-after-ms': '1500', 'retry-after': '2' }))
    expect(result.error?.retryAfterMs).toBe(1500)
  })

  it('reads headers found on an axios-style response', async () => {
    const { result } = await dispatchThrowing(() =>
      Object.assign(new Error('Request failed with status code 429'), { response: { status: 429, headers: { 'retry-after': '3' } } }),
    )
    expect(result.error?.retryAfterMs).toBe(3000)
  })
})

function withStatusAndHeaders(status: number, headers: Record<string, string>) {
  return Object.assign(new Error('request failed'), { status, headers })
}

describe('the text the model reads (redaction corpus on result.content)', () => {
  const stackTrace = [
    "Error: ENOENT: no such file or directory, open '/home/alice/work/shop/config/prod.json'",
    '    at Object.openSync (node:fs:573:18)',
    '    at readConfig (/home/alice/work/shop/src/config.ts:12:5)',
    '    at main (/Users/bob/dev/shop/src/main.ts:3:1)',
    '    at C:\\Users\\carol\\shop\\src\\main.ts:9:2',
  ].join('\n')

  const corpus: ReadonlyArray<
    readonly [what: string, thrown: () => unknown, mustNotContain: readonly string[], mustContain: readonly string[]]
  > = [
    [
      'a database URL with a password and a private IP',
      () => errno('ECONNREFUSED', 'cannot reach postgres://u:p@10.0.0.5/db'),
      ['u:p', '10.0.0.5'],
      ['postgres://[redacted]@[redacted]/db'],
    ],
    [
      'a stack trace with home paths',
      () => Object.assign(new Error(stackTrace), { code: 'ENOENT' }),
      ['alice', 'bob', 'carol', '    at '],
      ["open '[redacted]/work/shop/config/prod.json'"],
    ],
    [
      'a Stripe live key',
      () => withStatus(401, 'Invalid API Key provided: sk_live_51HcXyZabcdefghijklmnop'),
      ['sk_live_', '51HcXyZ'],
      ['Invalid API Key provided: [redacted]'],
    ],
    [
      'Unicode tag characters smuggling an instruction',
      () => withStatus(400, 'bad id\u{E0041}\u{E0049}\u{E0020}\u{E0069}\u{E0067}\u{E006E}'),
      ['\u{E0041}', '\u{E0069}', '\u{E006E}'],
      ['bad id'],
    ],
    [
      'zero-width and bidi controls',
      () => withStatus(400, 'pa\u200Bth\u202Eevil\u2066x\uFEFF'),
      ['\u200B', '\u202E', '\u2066', '\uFEFF'],
      ['pathevilx'],
    ],
    [
      'an OpenAI key and a bearer token',
      () => withStatus(401, 'key sk-proj-AbCdEfGhIjKlMnOpQrStUv rejected; sent Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.sig'),
      ['sk-proj-', 'AbCdEf', 'eyJhbGciOi'],
      ['key [redacted] rejected'],
    ],
    [
      'GitHub, AWS and Slack tokens',
      () => withStatus(403, 'ghp_0123456789abcdefghijABCDEFGHIJ AKIAIOSFODNN7EXAMPLE xoxb-123456789012-abcdefghij'),
      ['ghp_', 'AKIAIOSFODNN7EXAMPLE', 'xoxb-'],
      [],
    ],
    [
      'private IPv4 and IPv6 addresses',
      () => errno('EHOSTUNREACH', 'no route to 172.20.3.4, 192.168.0.10, 127.0.0.1, [::1]:8080 or fd12:3456::7'),
      ['172.20', '192.168', '127.0.0.1', '::1', 'fd12'],
      ['no route to [redacted], [redacted]'],
    ],
    [
      'an internal host name',
      () => errno('ENOTFOUND', 'getaddrinfo ENOTFOUND billing.prod.internal'),
      ['billing.prod.internal'],
      ['getaddrinfo ENOTFOUND [redacted]'],
    ],
  ]

  it.each(corpus)('redacts %s', async (_what, thrown, mustNotContain, mustContain) => {
    const { result } = await dispatchThrowing(thrown)
    expect(result.ok).toBe(false)
    for (const text of mustNotContain) expect(result.content).not.toContain(text)
    for (const text of mustContain) expect(result.content).toContain(text)
  })

  it('keeps what the model needs to act', async () => {
    const { result } = await dispatchThrowing(() => Object.assign(new Error('file src/mian.rs not found'), { code: 'ENOENT' }))
    expect(result.content).toBe('{"error":"not_found","message":"file src/mian.rs not found","hint":"check the path"}')
  })

  it('redacts the literal secrets it is given', async () => {
    const { result } = await dispatchThrowing(() => withStatus(401, 'token tok-4f9a2 refused'), { secrets: ['tok-4f9a2'] })
    expect(result.error?.message).toBe('HTTP 401 Unauthorized: token [redacted] refused')
  })

  it('caps the message at 500 characters with a visible marker', async () => {
    const { result } = await dispatchThrowing(() => withStatus(500, `upstream said: ${'x'.repeat(5000)}`))
    expect(result.error?.message).toHaveLength(500)
    expect(result.error?.message).toMatch(/… \[truncated from 5047 chars\]$/)
  })

  it('caps at the configured maxLength', async () => {
    const { result } = await dispatchThrowing(() => withStatus(500, 'y'.repeat(300)), { maxLength: 100 })
    expect(result.error?.message).toHaveLength(100)
  })

  it.each([
    ['a'.repeat(1e5), 'a'],
    ['/home/'.repeat(2e4), '/home/'],
    ['sk-'.repeat(3e4), '[redacted]'],
    [`${'@'.repeat(1e5)}://`, '@'],
  ])('classifies a 100 KB pathological message to a capped, correct text (%#)', async (message, start) => {
    const { result } = await dispatchThrowing(() => withStatus(500, message))
    expect(result.error?.code).toBe('upstream_error')
    expect(result.error?.message.startsWith(`HTTP 500 Internal Server Error: ${start}`)).toBe(true)
    expect(result.error?.message.length).toBeLessThanOrEqual(500)
    expect(result.error?.message).toMatch(/… \[truncated from \d+ chars\]$/)
  })
})
