// The model side of the classifier against core's own model path, row by row: the same failure,
// thrown by the real OpenAI and Anthropic SDKs (retries off) at fakeProvider on 127.0.0.1 or built
// by hand, is judged by core's transient rule (what its own model path retried) and goes through a
// createAgent whose model onion holds errorClassifier() alone; the layer's verdict is read from the outcome.
import Anthropic from '@anthropic-ai/sdk'
import { createAgent } from '@shallot/agent'
import { defineTool, LoopError, type ModelAdapter, type ModelMiddleware, type ModelResponse, OptionsError, ToolError } from '@shallot/core'
import { isTransientModelError } from '@shallot/core/kit'
import { type FakeProvider, type FakeTurn, fakeProvider } from '@shallot/testing'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { errorClassifier, errorClassifierDefinition } from './index.js'

let provider: FakeProvider
beforeAll(async () => {
  provider = await fakeProvider()
})
afterAll(() => provider.close())

const SECRET = 'sk-test-key-not-a-secret-0123456789'

async function thrownBy(client: 'openai' | 'anthropic', turn: FakeTurn): Promise<unknown> {
  provider.script(turn)
  try {
    if (client === 'openai')
      await new OpenAI({ apiKey: SECRET, baseURL: provider.openaiBaseURL, maxRetries: 0 }).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi' }],
      })
    else
      await new Anthropic({ apiKey: SECRET, baseURL: provider.url, maxRetries: 0 }).messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hi' }],
      })
  } catch (err) {
    return err
  }
  throw new Error(`${client} did not throw for ${JSON.stringify(turn)}`)
}

const echo = defineTool({ name: 'echo', description: 'Echo', input: z.object({}), effect: 'read', execute: () => 'ok' })
const done: ModelResponse = { text: 'done', toolCalls: [] }

/** Fails once with `error`, then answers. */
function failingOnce(error: unknown): ModelAdapter & { calls: number } {
  const model = {
    name: 'gpt-test',
    calls: 0,
    generate() {
      model.calls++
      return model.calls === 1 ? Promise.reject(error) : Promise.resolve(done)
    },
  }
  return model
}

/**
 * Core's verdict: the rule its own model path retried by (`isTransientModelError`, from `@shallot/core/kit`),
 * asked directly now that core asks the model only through its onion (decision 500, step 3).
 */
function coreRetries(error: unknown): boolean {
  return isTransientModelError(error)
}

/** What a layer outside the classifier catches, and how the run ends, with errorClassifier() as the only layer inside it. */
async function throughLayer(error: unknown): Promise<{ caught: unknown; outcome: { status: string; error?: unknown } }> {
  let caught: unknown
  const outer: ModelMiddleware = async (_ctx, next) => {
    try {
      await next()
    } catch (err) {
      caught = err
      throw err
    }
  }
  const outcome = await createAgent({ model: failingOnce(error), tools: [echo], modelMiddleware: [outer, errorClassifier()] }).run({
    input: 'go',
  })
  return { caught, outcome }
}

interface Row {
  readonly name: string
  readonly error: () => unknown | Promise<unknown>
  /** What a layer outside reads: a ToolError code, a LoopError kind, or `raw` (the throwable unchanged). */
  readonly expect: { code?: string; kind?: string; raw?: true; retryAfterMs?: number; reason?: string }
  /** Rows where the provider's body says more than core reads: why the retry verdicts differ. */
  readonly refines?: string
  /** Rows where both retry alike but the run ends with a kind that names the fix, where core says model_failed. */
  readonly ends?: string
}

const status = (s: number, extra: Record<string, unknown> = {}) => Object.assign(new Error(`HTTP ${s}`), { status: s, ...extra })
const coded = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.5:443`), { code })

const rows: Row[] = [
  // Built by hand: what core reads (status, statusCode, code, name, cause).
  { name: '503', error: () => status(503), expect: { code: 'upstream_error' } },
  { name: '500 as statusCode', error: () => Object.assign(new Error('x'), { statusCode: 500 }), expect: { code: 'upstream_error' } },
  { name: '408', error: () => status(408), expect: { code: 'timeout' } },
  { name: '529', error: () => status(529), expect: { code: 'overloaded' } },
  { name: '599', error: () => status(599), expect: { code: 'upstream_error' } },
  {
    name: '429 with Retry-After 2',
    error: () => status(429, { headers: { 'Retry-After': '2' } }),
    expect: { code: 'rate_limited', retryAfterMs: 2000 },
  },
  {
    name: '429 with retry-after-ms 1500 and a Headers object',
    error: () => status(429, { headers: new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }) }),
    expect: { code: 'rate_limited', retryAfterMs: 1500 },
  },
  {
    name: '429 with Retry-After NaN, -1 and 1e309',
    error: () => status(429, { headers: { 'retry-after': 'NaN' } }),
    expect: { code: 'rate_limited' },
  },
  {
    name: '429 asking a day: clamped to 60 s',
    error: () => status(429, { headers: { 'retry-after': '86400' } }),
    expect: { code: 'rate_limited', retryAfterMs: 60_000 },
  },
  { name: '400', error: () => status(400), expect: { raw: true } },
  { name: '404 unknown model', error: () => status(404), expect: { raw: true } },
  { name: '409', error: () => status(409), expect: { raw: true } },
  { name: 'ECONNRESET', error: () => coded('ECONNRESET'), expect: { code: 'network_error' } },
  { name: 'ECONNREFUSED', error: () => coded('ECONNREFUSED'), expect: { code: 'network_error' } },
  { name: 'ETIMEDOUT', error: () => coded('ETIMEDOUT'), expect: { code: 'network_error' } },
  { name: 'UND_ERR_SOCKET', error: () => coded('UND_ERR_SOCKET'), expect: { code: 'network_error' } },
  { name: 'EAI_AGAIN', error: () => coded('EAI_AGAIN'), expect: { code: 'network_error' } },
  {
    name: 'fetch failed, caused by ECONNREFUSED',
    error: () => new TypeError('fetch failed', { cause: coded('ECONNREFUSED') }),
    expect: { code: 'network_error' },
  },
  { name: 'TimeoutError', error: () => new DOMException('The operation timed out', 'TimeoutError'), expect: { code: 'timeout' } },
  { name: 'AbortError (not the run cancelled)', error: () => new DOMException('aborted', 'AbortError'), expect: { raw: true } },
  { name: 'a plain Error', error: () => new Error('boom'), expect: { raw: true } },
  { name: "an adapter's TypeError", error: () => new TypeError('x is not a function'), expect: { raw: true } },
  { name: 'a string', error: () => 'nope', expect: { raw: true } },
  { name: 'null', error: () => null, expect: { raw: true } },
  {
    name: 'a reset after status 200 (the body cut short)',
    error: () => Object.assign(coded('ECONNRESET'), { status: 200 }),
    expect: { code: 'network_error' },
    refines:
      'core reads the status first and holds a 200 final; the reset says the answer was cut short, and a model call has no side effect to repeat (the AI SDK adapter retries it too)',
  },
  {
    name: 'a ToolError an adapter classified already',
    error: () => new ToolError('rate_limited', 'slow down', { category: 'transient', retryable: true, retryAfterMs: 3 }),
    expect: { code: 'rate_limited', retryAfterMs: 3 },
  },
  {
    name: "an adapter's LoopError",
    error: () => new LoopError('context_exceeded', 'too long'),
    expect: { kind: 'context_exceeded' },
  },
  {
    name: 'a cause chain that loops, 503 at the end',
    error: () => {
      const a: Error & { cause?: unknown } = new Error('a')
      const b = Object.assign(new Error('b'), { cause: a, status: 503 })
      a.cause = b
      return a
    },
    expect: { code: 'upstream_error' },
  },
  // Thrown by the real SDKs.
  {
    name: 'OpenAI SDK: 429 rate limit, retry-after 1',
    error: () => thrownBy('openai', { fault: 'rate_limit', retryAfterSeconds: 1 }),
    expect: { code: 'rate_limited', retryAfterMs: 1000 },
  },
  { name: 'OpenAI SDK: 503 overloaded', error: () => thrownBy('openai', { fault: 'overloaded' }), expect: { code: 'upstream_error' } },
  { name: 'OpenAI SDK: 500', error: () => thrownBy('openai', { fault: 'server_error' }), expect: { code: 'upstream_error' } },
  { name: 'OpenAI SDK: 400 invalid request', error: () => thrownBy('openai', { fault: 'invalid_request' }), expect: { raw: true } },
  {
    name: 'OpenAI SDK: 400 context_length_exceeded',
    error: () => thrownBy('openai', { fault: 'context_length_exceeded' }),
    expect: { kind: 'context_exceeded' },
    ends: 'core ends it as model_failed; the body says the request does not fit, which no retry changes',
  },
  {
    name: 'OpenAI SDK: 429 insufficient_quota',
    error: () => thrownBy('openai', { fault: 'insufficient_quota' }),
    expect: { kind: 'user_input_required', reason: 'quota' },
    refines: 'core retries every 429; the body says the quota is used up, which no wait fixes (the AI SDK adapter says the same)',
  },
  {
    name: 'OpenAI SDK: 401',
    error: () => thrownBy('openai', { fault: 'authentication' }),
    expect: { kind: 'user_input_required', reason: 'credentials' },
    ends: 'core ends it as model_failed; the kind names who must act',
  },
  { name: 'Anthropic SDK: 529 overloaded', error: () => thrownBy('anthropic', { fault: 'overloaded' }), expect: { code: 'overloaded' } },
  {
    name: 'Anthropic SDK: 429, retry-after-ms 250',
    error: () => thrownBy('anthropic', { fault: 'rate_limit', retryAfterMs: 250 }),
    expect: { code: 'rate_limited', retryAfterMs: 250 },
  },
  {
    name: 'Anthropic SDK: 400 prompt is too long',
    error: () => thrownBy('anthropic', { fault: 'context_length_exceeded' }),
    expect: { kind: 'context_exceeded' },
    ends: 'core ends it as model_failed',
  },
  {
    name: 'fetch failed: the provider’s certificate has expired',
    error: () =>
      new TypeError('fetch failed', { cause: Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }) }),
    expect: { kind: 'user_input_required', reason: 'certificate' },
    refines: 'core calls every connection failure transient; a certificate that fails verification is fixed by a person, not by a wait',
  },
  {
    name: 'fetch failed: a self-signed certificate in the chain (an intercepting proxy)',
    error: () =>
      new TypeError('fetch failed', { cause: Object.assign(new Error('self-signed certificate'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }) }),
    expect: { kind: 'user_input_required', reason: 'certificate' },
    refines: 'the same: no retry helps',
  },
  {
    name: 'Anthropic SDK: 403 permission',
    error: () => thrownBy('anthropic', { fault: 'permission_denied' }),
    expect: { kind: 'user_input_required', reason: 'credentials' },
    ends: 'core ends it as model_failed',
  },
]

describe('errorClassifier(), model calls: the same verdict as core for the same failure', () => {
  it.each(rows.map((row) => [row.name, row] as const))('%s', async (_name, row) => {
    const error = await row.error()
    const retried = coreRetries(error)
    const { caught, outcome } = await throughLayer(error)
    expect(outcome.status).toBe('stopped')
    const { expect: want } = row
    if (want.raw) {
      expect(caught).toBe(error)
    } else if (want.kind !== undefined) {
      expect(LoopError.is(caught) && caught.kind).toBe(want.kind)
      // A LoopError ends the run as the same object.
      expect(outcome.error).toBe(caught)
      if (want.reason !== undefined) expect((caught as LoopError).details.reason).toBe(want.reason)
    } else {
      expect(ToolError.is(caught) && caught.code).toBe(want.code)
      expect((caught as ToolError).retryAfterMs).toBe(want.retryAfterMs)
      // Core ends a run whose last failure was a ToolError as model_failed, caused by it.
      expect(LoopError.is(outcome.error) && outcome.error.kind).toBe('model_failed')
      expect((outcome.error as LoopError).cause).toBe(caught)
    }
    // Retryable by the layer exactly when core retries it, except the rows whose error says more than core reads.
    const layerRetries = ToolError.is(caught) && caught.retryable
    if (row.refines === undefined) expect(layerRetries).toBe(retried)
    else expect(layerRetries).toBe(!retried)
  })

  it('quotes the provider, never the key, and keeps the status for the report', async () => {
    const error = await thrownBy('openai', { fault: 'rate_limit', message: `Rate limit reached for key ${SECRET}`, retryAfterSeconds: 1 })
    const layer = errorClassifierDefinition.buildModel({ secrets: [SECRET] })
    const outcome = await createAgent({ model: failingOnce(error), tools: [echo], modelMiddleware: layer }).run({ input: 'go' })
    const failure = outcome.status === 'stopped' ? outcome.error : undefined
    expect(LoopError.is(failure) && failure.kind).toBe('model_failed')
    const cause = (failure as LoopError).cause as ToolError
    expect(cause.details).toMatchObject({ status: 429, providerMessage: expect.stringContaining('Rate limit reached') })
    expect(JSON.stringify(cause.details)).not.toContain(SECRET)
    expect(cause.message).not.toContain(SECRET)
    // Core's own words for the report read the classified error.
    expect((failure as LoopError).details.failure).toMatch(/^429 rate limited by the provider \(.*Rate limit reached.*\), Retry-After 1 s$/)
  })

  it('leaves a throwable whose every read throws as it is', async () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap')
        },
        getPrototypeOf() {
          throw new Error('trap')
        },
        has() {
          throw new Error('trap')
        },
      },
    )
    const { caught, outcome } = await throughLayer(hostile)
    expect(caught).toBe(hostile)
    expect(outcome.status).toBe('stopped')
  })

  it('a cancelled run ends as cancelled, whatever the adapter threw on its way out', async () => {
    const controller = new AbortController()
    const model: ModelAdapter = {
      name: 'gpt-test',
      generate: () => {
        controller.abort()
        return Promise.reject(status(503))
      },
    }
    const outcome = await createAgent({ model, tools: [echo], modelMiddleware: errorClassifier() }).run({
      input: 'go',
      signal: controller.signal,
    })
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('cancelled')
  })

  it('refuses garbage options by name, through the definition as a config file builds it', () => {
    expect(() => errorClassifierDefinition.buildModel({ maxRetryAfterMs: -1 })).toThrow(OptionsError)
    expect(() => errorClassifierDefinition.buildModel({ rule: [] })).toThrow(/rule/)
    expect(errorClassifierDefinition.handles).toEqual({ tools: true, models: true })
  })
})
