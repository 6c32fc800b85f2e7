import { LoopError, ToolError } from '@shallot/core'
import { APICallError } from 'ai'
import { describe, expect, it } from 'vitest'
import { classifyModelError } from './classify-model-error.js'

const apiError = (statusCode: number | undefined, responseHeaders: Record<string, string> = {}, data?: unknown, message = 'failed') =>
  new APICallError({
    message,
    url: 'https://api.example.com/v1',
    requestBodyValues: {},
    responseHeaders,
    data,
    ...(statusCode === undefined ? {} : { statusCode }),
  })

const NOW = Date.parse('2026-12-01T10:00:00Z')
const at = { wallNow: () => NOW }

describe('classifyModelError: Retry-After', () => {
  it.each([
    [{ 'retry-after': '2' }, 2000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after-ms': '1500', 'retry-after': '2' }, 1500],
    [{ 'Retry-After': '3' }, 3000],
    [{ 'retry-after': new Date(NOW + 4_000).toUTCString() }, 4000],
    // A date already past asks for no wait: read as none, as @shallot/error-classifier's one parser does (decision 510).
    [{ 'retry-after': new Date(NOW - 60_000).toUTCString() }, undefined],
    [{ 'retry-after': '3600' }, 3_600_000],
    [{ 'retry-after': 'NaN' }, undefined],
    [{ 'retry-after': '-5' }, undefined],
    [{ 'retry-after': '1e3' }, undefined],
    [{ 'retry-after': '' }, undefined],
    [{ 'retry-after': 'Infinity' }, undefined],
    [{ 'retry-after': 'Mon, 99 Foo 2026' }, undefined],
    [{ 'retry-after-ms': 'soon', 'retry-after': '1' }, 1000],
    [{ 'retry-after-ms': '9'.repeat(400) }, 86_400_000],
  ])('reads %j as retryAfterMs %s, a floor that is finite, not negative and clamped', (headers, retryAfterMs) => {
    const error = classifyModelError(apiError(429, headers), at)
    expect(ToolError.is(error)).toBe(true)
    expect((error as ToolError).retryAfterMs).toBe(retryAfterMs)
  })

  it('clamps to maxRetryAfterMs', () => {
    expect(classifyModelError(apiError(529, { 'retry-after': '30' }), { ...at, maxRetryAfterMs: 5_000 })).toMatchObject({
      retryAfterMs: 5_000,
    })
  })
})

describe('classifyModelError: channels', () => {
  it.each([
    [apiError(429, {}, { error: { code: 'rate_limit_exceeded' } }), 'rate_limited', true],
    [apiError(500), 'upstream_error', false],
    [apiError(502), 'upstream_error', false],
    [apiError(503), 'overloaded', true],
    [apiError(529, {}, { error: { type: 'overloaded_error' } }), 'overloaded', true],
    [apiError(408), 'timeout', false],
    [apiError(200, {}, undefined, 'Failed to process successful response'), 'network_error', false],
    [
      Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) }),
      'network_error',
      true,
    ],
    [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'network_error', true],
    [{ message: 'The server had an error', type: 'server_error', code: 'server_error', param: null }, 'upstream_error', false],
    [{ type: 'overloaded_error', message: 'Overloaded' }, 'overloaded', true],
    [{ type: 'error', error: { type: 'api_error', message: 'Internal' } }, 'upstream_error', false],
    [{ statusCode: 500, isRetryable: true, code: 'server_error', message: 'boom' }, 'upstream_error', false],
    [{ something: 'odd' }, 'upstream_error', false],
  ])('%o is a transient ToolError %s', (input, code, safeToRepeat) => {
    const error = classifyModelError(input)
    expect(ToolError.is(error)).toBe(true)
    expect(error).toMatchObject({ code, category: 'transient', retryable: true, safeToRepeat })
  })

  it.each([
    [apiError(400, {}, { error: { type: 'invalid_request_error', message: 'bad' } }), 'model_failed'],
    [apiError(404, {}, { error: { message: 'The model `gpt-9` does not exist' } }), 'model_failed'],
    [apiError(401, {}, { error: { code: 'invalid_api_key', message: 'Incorrect API key provided' } }), 'user_input_required'],
    [apiError(403), 'user_input_required'],
    [apiError(402), 'user_input_required'],
    [
      apiError(429, {}, { error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your current quota' } }),
      'user_input_required',
    ],
    [
      apiError(400, {}, { error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the API' } }),
      'user_input_required',
    ],
    [
      apiError(400, {}, { error: { code: 'context_length_exceeded', message: "This model's maximum context length is 128000 tokens" } }),
      'context_exceeded',
    ],
    [
      apiError(400, {}, { error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } }),
      'context_exceeded',
    ],
    [apiError(413, {}, { error: { type: 'request_too_large' } }), 'context_exceeded'],
    [{ type: 'invalid_request_error', message: 'bad tool schema' }, 'model_failed'],
    [new Error('something else'), 'model_failed'],
    ['a string', 'model_failed'],
    [null, 'model_failed'],
    [Symbol('odd'), 'model_failed'],
  ])('%o ends the run as %s', (input, kind) => {
    const error = classifyModelError(input)
    expect(LoopError.is(error)).toBe(true)
    expect(error).toMatchObject({ kind })
  })

  it('quotes the provider message sanitized, in the reason', () => {
    const error = classifyModelError(
      apiError(
        401,
        {},
        { error: { message: 'Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx\u200b. See http://10.0.0.5/help' } },
      ),
    )
    expect(error.message).toMatch(/^the model provider refused the credentials \(401\): Incorrect API key provided/)
    expect(error.message).not.toMatch(/sk-proj-abcdefghijklmnop|10\.0\.0\.5|\u200b/)
    expect(error).toMatchObject({ details: { status: 401, reason: 'credentials' } })
  })

  it('redacts your own secrets and caps a huge provider message', () => {
    const error = classifyModelError(apiError(400, {}, { error: { message: `acct_hunter2 ${'x'.repeat(100_000)}` } }), {
      secrets: ['acct_hunter2'],
    })
    expect(error.message).not.toContain('acct_hunter2')
    expect(error.message.length).toBeLessThan(700)
  })

  it('passes shallot errors through untouched', () => {
    const soft = new ToolError('timeout', 'slow')
    const hard = new LoopError('cancelled', 'stop')
    expect(classifyModelError(soft)).toBe(soft)
    expect(classifyModelError(hard)).toBe(hard)
  })

  it('survives a cyclic cause chain and throwing getters', () => {
    const a: Record<string, unknown> = { name: 'Error', message: 'loop' }
    a.cause = { cause: a, code: 'ECONNRESET' }
    expect(classifyModelError(a)).toMatchObject({ code: 'network_error' })
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap')
        },
      },
    )
    expect(classifyModelError(hostile)).toSatisfy(ToolError.is)
    const getter = Object.defineProperty(new Error('x'), 'statusCode', {
      get() {
        throw new Error('nope')
      },
    })
    expect(classifyModelError(getter)).toMatchObject({ kind: 'model_failed' })
  })

  it('does not mistake a 429 that mentions context for a context error', () => {
    expect(classifyModelError(apiError(429, {}, { error: { message: 'too many tokens per minute' } }))).toMatchObject({
      code: 'rate_limited',
    })
  })
})
