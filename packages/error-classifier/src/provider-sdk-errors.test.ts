// The errors here are thrown by the real SDKs (openai, @anthropic-ai/sdk, ai with @ai-sdk/openai and
// @ai-sdk/anthropic) talking HTTP to fakeProvider on 127.0.0.1, each with its own retries off.
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import Anthropic from '@anthropic-ai/sdk'
import { createStack, defineTool, ToolError } from '@shallot/core'
import { type FakeProvider, type FakeTurn, fakeProvider } from '@shallot/testing'
import { APICallError, generateText, RetryError } from 'ai'
import OpenAI, { APIConnectionTimeoutError, APIUserAbortError } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { classify, errorClassifier, tryClassify } from './index.js'

let provider: FakeProvider
beforeAll(async () => {
  provider = await fakeProvider()
})
afterAll(() => provider.close())

type Client = 'openai' | 'anthropic' | 'ai-sdk openai' | 'ai-sdk anthropic'
const clients: readonly Client[] = ['openai', 'anthropic', 'ai-sdk openai', 'ai-sdk anthropic']

/** One call of each client with its own retries off; resolves to what it threw. */
async function thrownBy(client: Client, turn: FakeTurn, apiKey = 'sk-test-key-not-a-secret'): Promise<unknown> {
  provider.script(turn)
  try {
    if (client === 'openai') {
      await new OpenAI({ apiKey, baseURL: provider.openaiBaseURL, maxRetries: 0 }).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi' }],
      })
    } else if (client === 'anthropic') {
      await new Anthropic({ apiKey, baseURL: provider.url, maxRetries: 0 }).messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hi' }],
      })
    } else {
      const model =
        client === 'ai-sdk openai'
          ? createOpenAI({ apiKey, baseURL: provider.openaiBaseURL }).chat('gpt-4o')
          : createAnthropic({ apiKey, baseURL: provider.anthropicBaseURL })('claude-sonnet-4-5')
      await generateText({ model, prompt: 'hi', maxRetries: 0 })
    }
  } catch (err) {
    return err
  }
  throw new Error(`${client} did not throw for ${JSON.stringify(turn)}`)
}

const who: Record<Client, string> = {
  openai: 'OpenAI API',
  anthropic: 'Anthropic API',
  'ai-sdk openai': 'OpenAI-compatible API',
  'ai-sdk anthropic': 'Anthropic API',
}

interface Expected {
  code: string
  category: string
  retryable: boolean
  safeToRepeat: boolean
  retryAfterMs?: number
  /** The model's text, with `<who>` for the provider's name. */
  message: string
}

const rateLimited = (retryAfterMs: number, message: string): Expected => ({
  code: 'rate_limited',
  category: 'transient',
  retryable: true,
  safeToRepeat: true,
  retryAfterMs,
  message,
})
const OPENAI_RPM = 'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.'
const ANTHROPIC_RPM = 'This request would exceed the rate limit for your organization of 50 requests per minute.'
const openaiSide = (client: Client) => client === 'openai' || client === 'ai-sdk openai'

/** What each fault must become, per client. */
const cases: readonly [fault: string, turn: FakeTurn, expected: (client: Client) => Expected][] = [
  [
    'a 429 with Retry-After seconds',
    { fault: 'rate_limit', retryAfterSeconds: 7 },
    (c) =>
      openaiSide(c)
        ? rateLimited(7000, `<who>: HTTP 429 (rate_limit_exceeded): ${OPENAI_RPM}`)
        : rateLimited(7000, `<who>: HTTP 429 (rate_limit_error): ${ANTHROPIC_RPM}`),
  ],
  [
    'a 429 with retry-after-ms, which wins over Retry-After',
    { fault: 'rate_limit', retryAfterSeconds: 30, retryAfterMs: 1500 },
    (c) =>
      rateLimited(
        1500,
        openaiSide(c) ? `<who>: HTTP 429 (rate_limit_exceeded): ${OPENAI_RPM}` : `<who>: HTTP 429 (rate_limit_error): ${ANTHROPIC_RPM}`,
      ),
  ],
  [
    'a 429 with an HTTP-date Retry-After',
    { fault: 'rate_limit', headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:10 GMT' } },
    (c) =>
      rateLimited(
        10_000,
        openaiSide(c) ? `<who>: HTTP 429 (rate_limit_exceeded): ${OPENAI_RPM}` : `<who>: HTTP 429 (rate_limit_error): ${ANTHROPIC_RPM}`,
      ),
  ],
  [
    'insufficient quota (OpenAI: a 429; Anthropic: a 400 about credit)',
    { fault: 'insufficient_quota', retryAfterSeconds: 1 },
    (c) => ({
      code: 'quota_exceeded',
      category: 'user',
      retryable: false,
      safeToRepeat: true, // refused: nothing was processed (decision 405)
      message: openaiSide(c)
        ? '<who>: HTTP 429 (insufficient_quota): You exceeded your current quota, please check your plan and billing details.'
        : '<who>: HTTP 400 (invalid_request_error): Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
    }),
  ],
  [
    'overloaded (Anthropic 529 overloaded_error; OpenAI 503)',
    { fault: 'overloaded' },
    (c) =>
      openaiSide(c)
        ? {
            code: 'upstream_error',
            category: 'transient',
            retryable: true,
            safeToRepeat: false,
            message: '<who>: HTTP 503 (server_error): The engine is currently overloaded, please try again later.',
          }
        : {
            code: 'overloaded',
            category: 'transient',
            retryable: true,
            safeToRepeat: true,
            message: '<who>: HTTP 529 (overloaded_error): Overloaded',
          },
  ],
  [
    'a 500',
    { fault: 'server_error' },
    (c) => ({
      code: 'upstream_error',
      category: 'transient',
      retryable: true,
      safeToRepeat: false,
      message: openaiSide(c)
        ? '<who>: HTTP 500 (server_error): The server had an error while processing your request. Sorry about that!'
        : '<who>: HTTP 500 (api_error): Internal server error',
    }),
  ],
  [
    'a 400',
    { fault: 'invalid_request' },
    (c) => ({
      code: 'invalid_arguments',
      category: 'recoverable',
      retryable: false,
      safeToRepeat: true, // refused: nothing was processed (decision 405)
      message: openaiSide(c)
        ? "<who>: HTTP 400 (invalid_request_error): Invalid 'messages[0].role': expected one of 'system', 'user', 'assistant' or 'tool'."
        : '<who>: HTTP 400 (invalid_request_error): messages: roles must alternate between "user" and "assistant"',
    }),
  ],
  [
    'a 422',
    { fault: 'invalid_request', status: 422, message: 'unprocessable' },
    () => ({
      code: 'invalid_arguments',
      category: 'recoverable',
      retryable: false,
      safeToRepeat: true, // refused: nothing was processed (decision 405)
      message: '<who>: HTTP 422 (invalid_request_error): unprocessable',
    }),
  ],
  [
    'a 401',
    { fault: 'authentication' },
    (c) => ({
      code: 'auth_required',
      category: 'user',
      retryable: false,
      safeToRepeat: true, // refused: nothing was processed (decision 405)
      message: openaiSide(c)
        ? '<who>: HTTP 401 (invalid_api_key): Incorrect API key provided: sk-fake***. You can find your API key at https://platform.openai.com/account/api-keys.'
        : '<who>: HTTP 401 (authentication_error): invalid x-api-key',
    }),
  ],
  [
    'a 403',
    { fault: 'permission_denied' },
    (c) => ({
      code: 'permission_denied',
      category: 'fatal',
      retryable: false,
      safeToRepeat: true, // refused: nothing was processed (decision 405)
      message: openaiSide(c)
        ? '<who>: HTTP 403 (model_not_found): You are not allowed to sample from this model.'
        : '<who>: HTTP 403 (permission_error): Your API key does not have permission to use the specified resource.',
    }),
  ],
]

describe('errors of the real provider SDKs', () => {
  for (const [fault, turn, expected] of cases) {
    it.each(clients)(`classifies ${fault} from %s`, async (client) => {
      const now = () => Date.parse('Wed, 21 Oct 2026 07:28:00 GMT')
      const error = classify(await thrownBy(client, turn), { now })
      const { message, ...flags } = expected(client)
      const { code, category, retryable, safeToRepeat, retryAfterMs } = error
      expect({ code, category, retryable, safeToRepeat, retryAfterMs }).toEqual({ retryAfterMs: undefined, ...flags })
      expect(error.message).toBe(message.replace('<who>', who[client]))
    })
  }
})

describe('connection failures of the real SDKs', () => {
  it.each(clients)('a reset before any header from %s is a network_error that may have reached the server', async (client) => {
    const error = classify(await thrownBy(client, { fault: 'reset' }))
    expect(error).toMatchObject({ code: 'network_error', category: 'transient', retryable: true, safeToRepeat: false })
    expect(error.message.startsWith(client === 'openai' || client === 'anthropic' ? who[client] : 'AI SDK provider')).toBe(true)
    expect(error.message).toContain('other side closed')
  })

  it.each(clients)('a refused connection from %s is a network_error that is safe to repeat', async (client) => {
    const closed = await fakeProvider()
    await closed.close()
    const saved = provider
    provider = closed
    try {
      // A closed server refuses the connection; scripting it is never played.
      const error = classify(await thrownBy(client, { text: 'never sent' }))
      expect(error).toMatchObject({ code: 'network_error', category: 'transient', retryable: true, safeToRepeat: true })
      expect(error.details?.errorCodes).toContain('ECONNREFUSED')
      expect(error.message).not.toContain('127.0.0.1')
    } finally {
      provider = saved
    }
  })

  it("the OpenAI SDK's own timeout and abort errors are timeout and cancelled", () => {
    expect(classify(new APIConnectionTimeoutError())).toMatchObject({ code: 'timeout', category: 'transient', retryable: true })
    expect(classify(new APIUserAbortError())).toMatchObject({ code: 'cancelled', retryable: false })
    const anthropicTimeout = new Anthropic.APIConnectionTimeoutError()
    expect(classify(anthropicTimeout)).toMatchObject({ code: 'timeout', message: 'Anthropic API: Request timed out.' })
  })
})

describe('a stream that fails after some output', () => {
  const reply = { text: 'the first words of a longer answer' }

  it('Anthropic SDK: an overloaded_error event is a retryable overloaded, but not safe to repeat: the request was being served', async () => {
    provider.script({ fault: 'stream_error', reply })
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: provider.url, maxRetries: 0 })
    const stream = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    })
    const thrown = await (async () => {
      for await (const _event of stream);
    })().catch((err: unknown) => err)
    const error = classify(thrown)
    expect(error).toMatchObject({ code: 'overloaded', category: 'transient', retryable: true, safeToRepeat: false })
    expect(error.message).toBe('Anthropic API (overloaded_error): Overloaded')
  })

  it('OpenAI SDK: a server_error event is an upstream_error, not a panic', async () => {
    provider.script({ fault: 'stream_error', reply })
    const client = new OpenAI({ apiKey: 'sk-test-key-not-a-secret', baseURL: provider.openaiBaseURL, maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    const thrown = await (async () => {
      for await (const _chunk of stream);
    })().catch((err: unknown) => err)
    const error = classify(thrown)
    expect(error).toMatchObject({ code: 'upstream_error', category: 'transient', retryable: true, safeToRepeat: false })
    expect(error.message).toBe('OpenAI API (server_error): The server had an error while processing your request. Sorry about that!')
  })
})

describe("the AI SDK's RetryError", () => {
  it("is classified by its last attempt's error, with that response's Retry-After", async () => {
    const start = provider.requests.length
    provider.script(
      { fault: 'rate_limit', retryAfterMs: 0 },
      { fault: 'rate_limit', retryAfterMs: 0 },
      { fault: 'rate_limit', retryAfterSeconds: 7 },
    )
    // retry-after-ms: 0 makes the SDK's own retries immediate, so its three attempts cost no real wait.
    const model = createOpenAI({ apiKey: 'sk-test-key-not-a-secret', baseURL: provider.openaiBaseURL }).chat('gpt-4o')
    const thrown = await generateText({ model, prompt: 'hi', maxRetries: 2 }).catch((err: unknown) => err)
    expect(RetryError.isInstance(thrown)).toBe(true)
    expect(provider.requests.length - start).toBe(3)
    const error = classify(thrown)
    expect(error).toMatchObject({ code: 'rate_limited', retryable: true, safeToRepeat: true, retryAfterMs: 7000 })
    expect(error.message).toBe(`OpenAI-compatible API: HTTP 429 (rate_limit_exceeded): ${OPENAI_RPM}`)
  })

  it('a quota error the SDK gave up on at once is still quota_exceeded', async () => {
    provider.script({ fault: 'insufficient_quota' })
    const model = createOpenAI({ apiKey: 'sk-test-key-not-a-secret', baseURL: provider.openaiBaseURL }).chat('gpt-4o')
    // The AI SDK calls insufficient_quota retryable (it is a 429); shallot reads the code, not isRetryable.
    const thrown = await generateText({ model, prompt: 'hi', maxRetries: 0 }).catch((err: unknown) => err)
    expect(APICallError.isInstance(thrown) && thrown.isRetryable).toBe(true)
    expect(classify(thrown)).toMatchObject({ code: 'quota_exceeded', category: 'user', retryable: false })
  })
})

describe('secrets in provider errors', () => {
  const key = 'sk-proj-Zq8vT3xKw9LmN2pR7sYb4cHd6fJg1aE5'
  const antKey = 'sk-ant-api03-Hk2Jm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd0Ef'
  const hostile: FakeTurn = {
    fault: 'http',
    status: 429,
    body: {
      type: 'error',
      error: { type: 'rate_limit_error', message: `key ${key} of org-7 is over its limit (also tried ${antKey})`, code: null, param: null },
    },
    headers: {
      'retry-after': '3',
      'x-echo-authorization': `Bearer ${key}`,
      'x-echo-api-key': antKey,
      'x-request-id': 'req_header-text-the-model-never-sees',
    },
  }

  it.each(clients)('from %s: only Retry-After leaves the headers, and no key reaches the model', async (client) => {
    const thrown = await thrownBy(client, hostile, client.includes('anthropic') ? antKey : key)
    const seen: unknown[] = []
    const stack = createStack({
      middleware: [
        async function record(_ctx, next) {
          try {
            await next()
          } catch (err) {
            seen.push(err)
            throw err
          }
        },
        errorClassifier(),
      ],
      tools: [
        defineTool({
          name: 'summarise',
          description: 'Summarise with a model',
          input: z.object({}),
          effect: 'read',
          execute: () => {
            throw thrown
          },
        }),
      ],
    })
    const result = await stack.dispatch({ id: 'c1', name: 'summarise', args: {} })
    const error = seen[0]
    if (!ToolError.is(error)) throw new Error('expected a ToolError')
    expect(error).toMatchObject({ code: 'rate_limited', retryAfterMs: 3000 })
    const modelText = [result.content, error.message, error.hint, JSON.stringify(error.details)].join('\n')
    for (const leak of [key, antKey, 'sk-proj-', 'sk-ant-', 'Bearer', 'x-echo', 'req_header-text']) expect(modelText).not.toContain(leak)
    expect(result.content).toContain('[redacted]')
    // The original, with its headers, stays available to logs as the cause.
    expect(error.cause).toBe(thrown)
  })

  it('tryClassify leaves an OpenAI error it has no rule for to the panic catcher', () => {
    expect(tryClassify(new OpenAI.OpenAIError(`bad config for ${key}`))).toBeUndefined()
    expect(classify(new OpenAI.OpenAIError(`bad config for ${key}`), { tool: 'summarise' }).message).not.toContain(key)
  })
})

describe('through the middleware, in the default channels', () => {
  it('a quota refusal ends the run asking a person; a 529 stays soft and repeatable', async () => {
    const { LoopError } = await import('@shallot/core')
    const anthropic = new Anthropic({ apiKey: 'sk-ant-test', baseURL: provider.url, maxRetries: 0 })
    const ask = defineTool({
      name: 'ask_claude',
      description: 'Ask Claude',
      input: z.object({ q: z.string() }),
      effect: 'write',
      execute: async ({ q }, { signal }) => {
        const reply = await anthropic.messages.create(
          { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: q }] },
          { signal },
        )
        return reply.content
      },
    })
    const stack = createStack({ middleware: [errorClassifier()], tools: [ask] })
    provider.script({ fault: 'overloaded' }, { fault: 'insufficient_quota' })
    const overloaded = await stack.dispatch({ id: 'c1', name: 'ask_claude', args: { q: 'hi' } })
    expect(overloaded.error).toMatchObject({ code: 'overloaded', retryable: true, safeToRepeat: true })
    const quota = stack.dispatch({ id: 'c2', name: 'ask_claude', args: { q: 'hi' } })
    await expect(quota).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'user_input_required')
  })
})
