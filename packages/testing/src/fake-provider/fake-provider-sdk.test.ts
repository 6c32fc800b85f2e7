import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { APICallError, generateText, InvalidToolInputError, type LanguageModel, stepCountIs, streamText, tool } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type FakeApi, type FakeHttpFault, type FakeProvider, fakeProvider } from '../index.js'
import { manualClock } from '../manual-clock.js'

// The real provider packages, through `ai`'s generateText and streamText, against the fake server:
// what each wire format's replies and faults look like to the code that will wrap these SDKs.

interface Format {
  readonly name: string
  readonly api: FakeApi
  readonly model: (provider: FakeProvider) => LanguageModel
  /** The finish reason the API sends, as the SDK reports it raw: stop, tool calls, length. */
  readonly raw: { stop: string | undefined; tool_calls: string | undefined; length: string }
}

const formats: Format[] = [
  {
    name: 'OpenAI Chat Completions',
    api: 'openai-chat',
    model: (p) => createOpenAI({ baseURL: p.openaiBaseURL, apiKey: 'sk-fake' }).chat('gpt-4o-mini'),
    raw: { stop: 'stop', tool_calls: 'tool_calls', length: 'length' },
  },
  {
    name: 'OpenAI Responses',
    api: 'openai-responses',
    model: (p) => createOpenAI({ baseURL: p.openaiBaseURL, apiKey: 'sk-fake' }).responses('gpt-4o-mini'),
    raw: { stop: undefined, tool_calls: undefined, length: 'max_output_tokens' },
  },
  {
    name: 'Anthropic Messages',
    api: 'anthropic-messages',
    model: (p) => createAnthropic({ baseURL: p.anthropicBaseURL, apiKey: 'sk-ant-fake' }).messages('claude-sonnet-4-5'),
    raw: { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' },
  },
]

const files: Record<string, string> = { 'src/main.rs': 'fn main() {}', 'Cargo.toml': '[package]' }
const readFile = tool({
  description: 'Read a file',
  inputSchema: z.object({ path: z.string() }),
  execute: async ({ path }) => files[path] ?? `no such file: ${path}`,
})

type Mode = 'generateText' | 'streamText'

/** One model call in either mode, settled to what a caller sees: the result, or the error the SDK surfaced. */
async function call(model: LanguageModel, mode: Mode, options: { abortSignal?: AbortSignal; onDelta?: () => void } = {}) {
  const abort = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }
  const base = { model, system: 'You are terse.', prompt: 'read main', maxRetries: 0, ...abort }
  if (mode === 'generateText') {
    try {
      const r = await generateText({ ...base, tools: { read_file: readFile } })
      return { ok: true as const, text: r.text, finishReason: r.finishReason, raw: r.rawFinishReason, usage: r.usage, content: r.content }
    } catch (error) {
      return { ok: false as const, error }
    }
  }
  const r = streamText({ ...base, tools: { read_file: readFile }, onError: () => {} })
  const errors: unknown[] = []
  let streamed = ''
  let aborted = false
  try {
    for await (const part of r.fullStream) {
      if (part.type === 'error') errors.push(part.error)
      if (part.type === 'abort') aborted = true
      if (part.type === 'text-delta') {
        streamed += part.text
        options.onDelta?.()
      }
    }
  } catch (error) {
    return { ok: false as const, error, streamed }
  }
  // An aborted stream ends with an `abort` part rather than an error; its promises reject.
  if (aborted)
    return {
      ok: false as const,
      error: await r.text.then(
        () => undefined,
        (error: unknown) => error,
      ),
      streamed,
      aborted,
    }
  if (errors.length > 0)
    return { ok: false as const, error: errors[0], streamed, finishReason: await Promise.resolve(r.finishReason).catch(() => 'rejected') }
  return {
    ok: true as const,
    text: await r.text,
    finishReason: await r.finishReason,
    raw: await r.rawFinishReason,
    usage: await r.usage,
    content: await r.content,
  }
}

let provider: FakeProvider
beforeEach(async () => {
  provider = await fakeProvider()
})
afterEach(async () => {
  await provider.close()
})

describe.each(formats)('$name', (format) => {
  describe.each(['generateText', 'streamText'] as const)('%s', (mode) => {
    const stream = mode === 'streamText'

    it('reads a text reply, its finish reason and its usage, and records what was sent', async () => {
      provider.script({ text: 'Hello from the fake model.', usage: { inputTokens: 120, outputTokens: 7 } })
      const result = await call(format.model(provider), mode)
      expect(result).toMatchObject({ ok: true, text: 'Hello from the fake model.', finishReason: 'stop', raw: format.raw.stop })
      expect(result.ok && result.usage).toMatchObject({ inputTokens: 120, outputTokens: 7, totalTokens: 127 })
      const [request] = provider.requests
      expect(request).toMatchObject({
        index: 0,
        api: format.api,
        method: 'POST',
        stream,
        turn: 1,
        outcome: 'replied',
        system: 'You are terse.',
      })
      expect(request?.toolNames).toEqual(['read_file'])
      expect(request?.path).toBe(
        { 'openai-chat': '/v1/chat/completions', 'openai-responses': '/v1/responses', 'anthropic-messages': '/v1/messages' }[format.api],
      )
      if (format.api === 'anthropic-messages') expect(request?.headers['x-api-key']).toBe('sk-ant-fake')
      else expect(request?.headers.authorization).toBe('Bearer sk-fake')
    })

    it('plays two tool calls with their ids and JSON arguments, then a step that reads the tool results', async () => {
      provider.script(
        {
          toolCalls: [
            { id: 'call_a', name: 'read_file', args: { path: 'src/main.rs' } },
            { id: 'call_b', name: 'read_file', args: { path: 'Cargo.toml' } },
          ],
          usage: { inputTokens: 50, outputTokens: 20 },
        },
        (request) => ({ text: `read ${request.toolResults.map((r) => `${r.id}=${r.content}`).join(', ')}` }),
      )
      const model = format.model(provider)
      const options = { model, prompt: 'read both', tools: { read_file: readFile }, maxRetries: 0, stopWhen: stepCountIs(3) }
      const result = stream ? streamText(options) : await generateText(options)
      const steps = await result.steps
      expect(steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop'])
      expect(steps[0]?.toolCalls.map((c) => [c.toolCallId, c.toolName, c.input])).toEqual([
        ['call_a', 'read_file', { path: 'src/main.rs' }],
        ['call_b', 'read_file', { path: 'Cargo.toml' }],
      ])
      expect(steps[0]?.rawFinishReason).toBe(format.raw.tool_calls)
      expect(await result.text).toBe('read call_a=fn main() {}, call_b=[package]')
      expect(provider.requests[1]?.toolResults).toEqual([
        { id: 'call_a', content: 'fn main() {}' },
        { id: 'call_b', content: '[package]' },
      ])
    })

    it('counts usage from the sizes when the turn does not say', async () => {
      provider.script({ text: 'abcdefgh' })
      const result = await call(format.model(provider), mode)
      const body = JSON.stringify(provider.requests[0]?.body)
      expect(result.ok && result.usage).toMatchObject({ outputTokens: 2, inputTokens: Math.ceil(body.length / 4) })
    })

    it('cuts a tool call at the output limit: finish reason length, the arguments do not parse', async () => {
      provider.script({ fault: 'truncated', toolCall: { id: 'call_cut', name: 'read_file', args: { path: 'src/main.rs' } } })
      const result = await call(format.model(provider), mode)
      expect(result).toMatchObject({ ok: true, finishReason: 'length', raw: format.raw.length })
      const toolCall = result.ok ? result.content.find((part) => part.type === 'tool-call') : undefined
      expect(toolCall).toMatchObject({ toolCallId: 'call_cut', toolName: 'read_file', input: '{"path":"sr', invalid: true })
      expect(InvalidToolInputError.isInstance((toolCall as { error?: unknown } | undefined)?.error)).toBe(true)
    })

    it('sends malformed tool-call JSON verbatim: the SDK reports an invalid tool input', async () => {
      provider.script({ toolCalls: [{ id: 'call_bad', name: 'read_file', rawArgs: '{"path": "src/ma' }] })
      const result = await call(format.model(provider), mode)
      expect(result).toMatchObject({ ok: true, finishReason: 'tool-calls' })
      // OpenAI's arguments and Anthropic's streamed partial_json are text the SDK fails to parse; Anthropic's JSON
      // reply carries input as an object, so the unparseable text goes out as a JSON string and fails the schema instead.
      const toolCall = result.ok ? result.content.find((part) => part.type === 'tool-call') : undefined
      expect(toolCall).toMatchObject({ toolCallId: 'call_bad', input: '{"path": "src/ma', invalid: true })
      const error = (toolCall as { error?: unknown } | undefined)?.error
      expect(InvalidToolInputError.isInstance(error)).toBe(true)
      expect((error as Error).cause).toMatchObject({
        name: format.api === 'anthropic-messages' && !stream ? 'AI_TypeValidationError' : 'AI_JSONParseError',
      })
    })
  })
})

// What aiSdkModel will see. OpenAI's endpoints share one error body, Anthropic has its own.
const openai = { rate: 429, overloaded: 503, quota: 429 }
const anthropic = { rate: 429, overloaded: 529, quota: 400 }
const httpFaults: Array<{ turn: FakeHttpFault; status: (f: Format) => number; retryable: boolean; data: (f: Format) => unknown }> = [
  {
    turn: { fault: 'rate_limit', retryAfterSeconds: 2, retryAfterMs: 1500 },
    status: (f) => (f.api === 'anthropic-messages' ? anthropic : openai).rate,
    retryable: true,
    data: (f) => (f.api === 'anthropic-messages' ? { error: { type: 'rate_limit_error' } } : { error: { code: 'rate_limit_exceeded' } }),
  },
  {
    turn: { fault: 'server_error' },
    status: () => 500,
    retryable: true,
    data: (f) => (f.api === 'anthropic-messages' ? { error: { type: 'api_error' } } : { error: { type: 'server_error' } }),
  },
  {
    turn: { fault: 'overloaded' },
    status: (f) => (f.api === 'anthropic-messages' ? anthropic : openai).overloaded,
    retryable: true,
    data: (f) =>
      f.api === 'anthropic-messages' ? { error: { type: 'overloaded_error', message: 'Overloaded' } } : { error: { type: 'server_error' } },
  },
  {
    turn: { fault: 'overloaded', status: 529 },
    status: () => 529,
    retryable: true,
    data: () => ({ error: {} }),
  },
  {
    turn: { fault: 'invalid_request' },
    status: () => 400,
    retryable: false,
    data: () => ({ error: { type: 'invalid_request_error' } }),
  },
  {
    turn: { fault: 'authentication' },
    status: () => 401,
    retryable: false,
    data: (f) => (f.api === 'anthropic-messages' ? { error: { type: 'authentication_error' } } : { error: { code: 'invalid_api_key' } }),
  },
  {
    turn: { fault: 'permission_denied' },
    status: () => 403,
    retryable: false,
    data: (f) => (f.api === 'anthropic-messages' ? { error: { type: 'permission_error' } } : { error: { type: 'invalid_request_error' } }),
  },
  {
    // OpenAI's quota error is a 429 the SDK calls retryable: only `data.error.code` tells it from a rate limit.
    turn: { fault: 'insufficient_quota' },
    status: (f) => (f.api === 'anthropic-messages' ? anthropic : openai).quota,
    retryable: true,
    data: (f) =>
      f.api === 'anthropic-messages'
        ? { error: { type: 'invalid_request_error', message: expect.stringContaining('credit balance is too low') } }
        : { error: { type: 'insufficient_quota', code: 'insufficient_quota' } },
  },
  {
    turn: { fault: 'context_length_exceeded' },
    status: () => 400,
    retryable: false,
    data: (f) =>
      f.api === 'anthropic-messages'
        ? { error: { type: 'invalid_request_error', message: expect.stringMatching(/^prompt is too long/) } }
        : { error: { type: 'invalid_request_error', code: 'context_length_exceeded' } },
  },
]

describe.each(formats)('faults, $name', (format) => {
  describe.each(['generateText', 'streamText'] as const)('%s', (mode) => {
    const stream = mode === 'streamText'
    it.each(httpFaults.map((f) => ({ ...f, label: JSON.stringify(f.turn) })))('$label surfaces as an APICallError', async (fault) => {
      const retryable = fault.turn.fault === 'insufficient_quota' && format.api === 'anthropic-messages' ? false : fault.retryable
      provider.script(fault.turn)
      const result = await call(format.model(provider), mode)
      expect(result.ok).toBe(false)
      const error = result.ok ? undefined : result.error
      expect(APICallError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ statusCode: fault.status(format), isRetryable: retryable, data: fault.data(format) })
      if (fault.turn.fault === 'rate_limit') {
        expect((error as APICallError).responseHeaders).toMatchObject({ 'retry-after': '2', 'retry-after-ms': '1500' })
      }
      expect(provider.requests[0]?.outcome).toBe('faulted')
    })

    it('a reset before the headers is a retryable APICallError with no status (undici: other side closed)', async () => {
      provider.script({ fault: 'reset' })
      const result = await call(format.model(provider), mode)
      const error = result.ok ? undefined : result.error
      expect(APICallError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ statusCode: undefined, isRetryable: true, message: 'Cannot connect to API: other side closed' })
      expect((error as APICallError).cause).toMatchObject({ code: 'UND_ERR_SOCKET' })
    })

    it('a reset after the headers is a retryable APICallError with status 200 (the body failed)', async () => {
      provider.script({ fault: 'reset_mid_stream' })
      const result = await call(format.model(provider), mode)
      const error = result.ok ? undefined : result.error
      expect(APICallError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ statusCode: 200, isRetryable: true, message: 'Failed to process successful response' })
    })

    it('a hung response lasts until the caller aborts; the server sees the client leave', async () => {
      provider.script({ fault: 'hang' })
      const controller = new AbortController()
      const pending = call(format.model(provider), mode, { abortSignal: controller.signal })
      await provider.waitForRequest(0)
      controller.abort()
      const result = await pending
      expect(result).toMatchObject({ ok: false, error: { name: 'AbortError' } })
      await provider.whenIdle()
      expect(provider.requests[0]?.outcome).toBe('client_closed')
    })

    it('a stalled response sends part of its answer, then nothing until the caller aborts', async () => {
      provider.script({ fault: 'stall', reply: { text: 'one two three four five six' }, after: 6 })
      const controller = new AbortController()
      let deltas = 0
      const pending = call(format.model(provider), mode, {
        abortSignal: controller.signal,
        // Streaming: abort once some text arrived. JSON: once the request is in (half the body is on its way).
        onDelta: () => {
          if (++deltas === 1) controller.abort()
        },
      })
      if (!stream) {
        await provider.waitForRequest(0)
        controller.abort()
      }
      const result = await pending
      expect(result).toMatchObject({ ok: false, error: { name: 'AbortError' } })
      if (stream) expect(result).toMatchObject({ streamed: expect.stringMatching(/^one /) })
      await provider.whenIdle()
      expect(provider.requests[0]?.outcome).toBe('client_closed')
    })
  })

  it('an error event before any output: doStream throws a retryable APICallError', async () => {
    provider.script({ fault: 'stream_error', after: 0 })
    const result = await call(format.model(provider), 'streamText')
    const error = result.ok ? undefined : result.error
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ statusCode: format.api === 'anthropic-messages' ? 529 : 500, isRetryable: true })
  })

  it('an error event after some output: the stream carries a plain error object and ends with finish reason error', async () => {
    // Past the events that open the message, so the client has read some text before the error.
    provider.script({ fault: 'stream_error', reply: { text: 'one two three four five six seven eight' }, after: 7 })
    const result = await call(format.model(provider), 'streamText')
    expect(result).toMatchObject({ ok: false, finishReason: 'error' })
    const error = result.ok ? undefined : result.error
    expect(error).not.toBeInstanceOf(Error)
    expect(error).toEqual(
      {
        'openai-chat': { message: expect.any(String), type: 'server_error', code: 'server_error', param: null },
        'openai-responses': expect.objectContaining({ statusCode: 500, isRetryable: true, code: 'server_error' }),
        'anthropic-messages': { type: 'overloaded_error', message: 'Overloaded' },
      }[format.api],
    )
    expect(result.ok ? '' : result.streamed).toMatch(/^one two/)
  })

  it('a stream_error turn for a JSON request is a 500 that says why', async () => {
    provider.script({ fault: 'stream_error' })
    const result = await call(format.model(provider), 'generateText')
    expect(result.ok ? undefined : result.error).toMatchObject({
      statusCode: 500,
      message: 'fakeProvider: a stream_error turn needs a streaming request (stream: true)',
    })
  })
})

describe('arrival times', () => {
  it('stamps each request with the injected clock and the real one, so a test asserts the wait between them', async () => {
    const clock = manualClock(5_000)
    const timed = await fakeProvider({ now: clock.now, script: [{ fault: 'rate_limit', retryAfterSeconds: 1 }, { text: 'ok' }] })
    try {
      const model = formats[0]?.model(timed) as LanguageModel
      await expect(generateText({ model, prompt: 'hi', maxRetries: 0 })).rejects.toSatisfy(APICallError.isInstance)
      await clock.advance(1_000)
      await generateText({ model, prompt: 'hi', maxRetries: 0 })
      const [first, second] = timed.requests
      expect([first?.at, second?.at]).toEqual([5_000, 6_000])
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000)
      expect(second?.receivedAt).toBeGreaterThanOrEqual(first?.receivedAt ?? Number.POSITIVE_INFINITY)
    } finally {
      await timed.close()
    }
  })
})
