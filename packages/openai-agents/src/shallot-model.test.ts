// OpenAI Agents SDK model calls through shallot's model layers: the real SDK (`run()`, streamed runs, a Runner with a
// provider) over the local wire-format fake provider, the `openai` client with its default two retries, virtual time.
import { Agent, OpenAIChatCompletionsModel, OpenAIProvider, Runner, run, setTracingDisabled } from '@openai/agents'
import { LoopError, type ModelEvent, OptionsError } from '@shallot/core'
import { type FakeProvider, type FakeStep, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import OpenAI from 'openai'
import { defaultModelMiddleware, fallback } from 'shallot'
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { driven } from './drive.test-helper.js'
import { shallotModel, shallotModelProvider, spareModel } from './index.js'

beforeAll(() => setTracingDisabled(true))

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

async function serve(script: FakeStep[], clock: ManualClock, onEnd: 'fail' | 'repeat' = 'fail'): Promise<FakeProvider> {
  provider = await fakeProvider({ script, onEnd, now: () => clock.now() })
  return provider
}

// A client as users build it: the `openai` package's defaults, two retries of its own included.
const clientOf = (server: FakeProvider) => new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test-not-a-secret' })
const chatModel = (server: FakeProvider, name = 'gpt-4o') => new OpenAIChatCompletionsModel(clientOf(server), name)
const gaps = (server: FakeProvider) => server.requests.slice(1).map((r, i) => r.at - (server.requests[i]?.at ?? 0))
const rateLimited: FakeStep = { fault: 'rate_limit', retryAfterSeconds: 1 }

describe('shallotModel: an Agents SDK model behind the model layers', { timeout: 20_000 }, () => {
  it('survives three 429s asking for 1 s each: run() answers after four requests, none sooner than asked', async () => {
    const clock = manualClock()
    const server = await serve([rateLimited, rateLimited, rateLimited, { text: 'the answer' }], clock)
    const retries: Array<[number, boolean]> = []
    const model = shallotModel(chatModel(server), {
      name: 'gpt-4o',
      clock,
      modelMiddleware: defaultModelMiddleware({ retry: { maxAttempts: 4 } }),
      onEvent: (e) => e.type === 'model.retry' && retries.push([e.attempt, e.delayMs >= 1000]),
    })
    const result = await driven(clock, run(new Agent({ name: 'a', model }), 'hi'))
    expect(result.finalOutput).toBe('the answer')
    // Each 429 reached the layers: the client's own two retries (real sleeps) would have absorbed them.
    expect(retries).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ])
    expect(server.requests).toHaveLength(4)
    for (const gap of gaps(server)) expect(gap).toBeGreaterThanOrEqual(1000)
  })

  it('does not retry a 401: run() rejects with user_input_required after one request', async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'authentication' }], clock, 'repeat')
    const model = shallotModel(chatModel(server), { clock })
    const failure = await driven(clock, run(new Agent({ name: 'a', model }), 'hi')).catch((e: unknown) => e)
    expect(LoopError.is(failure) && failure.kind).toBe('user_input_required')
    expect(server.requests).toHaveLength(1)
  })

  it('ends a 503 that lasts as model_failed once the default stack has ridden it out for two minutes, with model.retry events', async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'server_error', status: 503 }], clock, 'repeat')
    const events: ModelEvent[] = []
    const model = shallotModel(chatModel(server), { name: 'gpt-4o', clock, onEvent: (e) => events.push(e) })
    const failure = await driven(clock, run(new Agent({ name: 'a', model }), 'hi')).catch((e: unknown) => e)
    expect(LoopError.is(failure) && failure.kind).toBe('model_failed')
    expect(server.requests.length).toBeGreaterThan(3)
    expect(server.requests.length).toBeLessThanOrEqual(21)
    const retried = events.filter((e) => e.type === 'model.retry').map((e) => e.model)
    expect(retried).toEqual(Array.from({ length: server.requests.length - 1 }, () => 'gpt-4o'))
  })

  it('retries a streamed run before its first event: two 429s, then the answer streams', async () => {
    const clock = manualClock()
    const server = await serve([rateLimited, rateLimited, { text: 'streamed answer' }], clock)
    const model = shallotModel(chatModel(server), { clock })
    const text = await driven(
      clock,
      (async () => {
        const streamed = await run(new Agent({ name: 'a', model }), 'hi', { stream: true })
        let read = ''
        for await (const event of streamed.toTextStream()) read += event
        await streamed.completed
        return read
      })(),
    )
    expect(text).toBe('streamed answer')
    expect(server.requests).toHaveLength(3)
  })

  it('cuts a stream that never starts at the deadline and asks again', async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'hang' }, { text: 'second try' }], clock)
    const model = shallotModel(chatModel(server), { clock, modelMiddleware: defaultModelMiddleware({ timeout: { ms: 2000 } }) })
    const output = await driven(
      clock,
      (async () => {
        const streamed = await run(new Agent({ name: 'a', model }), 'hi', { stream: true })
        for await (const _ of streamed) {
          // read to the end
        }
        await streamed.completed
        return streamed.finalOutput
      })(),
    )
    expect(output).toBe('second try')
    expect(server.requests.map((r) => r.outcome)).toEqual(['client_closed', 'replied'])
  })

  it('never retries a stream after its first event reached the caller: a reset mid-stream ends it as model_failed', async () => {
    const clock = manualClock()
    const server = await serve(
      [{ fault: 'reset_mid_stream', reply: { text: 'a long answer cut in the middle' } }, { text: 'never' }],
      clock,
    )
    const model = shallotModel(chatModel(server), { clock })
    const streamed = await driven(clock, run(new Agent({ name: 'a', model }), 'hi', { stream: true }))
    const failure = await (async () => {
      for await (const _ of streamed) {
        // read until it fails
      }
      await streamed.completed
    })().catch((e: unknown) => e)
    expect(LoopError.is(failure) && failure.kind).toBe('model_failed')
    expect((failure as LoopError).details).toMatchObject({ streamed: true })
    expect(server.requests).toHaveLength(1)
  })

  it("asks a spare model (fallback({ models: [spareModel(...)] })) when the agent's model stays down", async () => {
    const clock = manualClock()
    const server = await serve(
      [(request) => (request.model === 'gpt-4o' ? { fault: 'server_error', status: 503 } : { text: `from ${request.model}` })],
      clock,
      'repeat',
    )
    const events: string[] = []
    const model = shallotModel(chatModel(server), {
      name: 'gpt-4o',
      clock,
      onEvent: (e) => events.push(e.type === 'model.fallback' ? `${e.from} -> ${e.to}` : e.type),
      modelMiddleware: [fallback({ models: [spareModel(chatModel(server, 'gpt-4o-mini'), 'gpt-4o-mini')] }), ...defaultModelMiddleware()],
    })
    const result = await driven(clock, run(new Agent({ name: 'a', model }), 'hi'))
    expect(result.finalOutput).toBe('from gpt-4o-mini')
    expect(server.requests.map((r) => r.model)).toEqual(['gpt-4o', 'gpt-4o', 'gpt-4o', 'gpt-4o-mini'])
    expect(events).toContain('gpt-4o -> gpt-4o-mini')
  })

  it("refuses the runner's own model retries (modelSettings.retry), which would repeat the layers' retries", async () => {
    const clock = manualClock()
    const server = await serve([{ text: 'never' }], clock)
    const model = shallotModel(chatModel(server), { clock })
    const agent = new Agent({ name: 'a', model, modelSettings: { retry: { maxRetries: 2, policy: () => true } } })
    await expect(run(agent, 'hi')).rejects.toThrow(/modelSettings\.retry/)
    expect(server.requests).toHaveLength(0)
  })

  it("ends as cancelled when the caller's signal aborts during the backoff, and sends nothing more", async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'server_error', status: 503 }, { text: 'never' }], clock)
    const model = shallotModel(chatModel(server), { clock })
    const caller = new AbortController()
    const running = run(new Agent({ name: 'a', model }), 'hi', { signal: caller.signal }).catch((e: unknown) => e)
    await vi.waitFor(() => expect(clock.pending).toBeGreaterThan(0))
    await vi.waitFor(() => expect(server.requests[0]?.outcome).toBe('faulted'))
    caller.abort(new Error('user pressed stop'))
    const failure = await running
    expect(LoopError.is(failure) && failure.kind).toBe('cancelled')
    expect(server.requests).toHaveLength(1)
    expect(clock.pending).toBe(0)
  })

  it('runs fifty calls at once through one wrapped model: every one answered once, each after its own 503', async () => {
    const clock = manualClock()
    const seen = new Set<string>()
    const server = await serve(
      [
        (request) => {
          const input = JSON.stringify(request.body)
          if (seen.has(input)) return { text: `answer to ${input.length}` }
          seen.add(input)
          return { fault: 'server_error', status: 503 }
        },
      ],
      clock,
      'repeat',
    )
    // The breaker would open after three failures in a row; fifty calls failing once each are its business, not this test's.
    const model = shallotModel(chatModel(server), { clock, modelMiddleware: defaultModelMiddleware({ circuitBreaker: false }) })
    const runs = Array.from({ length: 50 }, (_, i) => run(new Agent({ name: 'a', model }), `question ${i}`))
    const results = await driven(clock, Promise.all(runs))
    expect(results.every((r) => typeof r.finalOutput === 'string' && r.finalOutput.startsWith('answer'))).toBe(true)
    expect(server.requests).toHaveLength(100)
  })

  it("aborts the request of a stream the caller leaves after its first event (the caller's signal reaches it)", async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'stall', reply: { text: 'a long answer that never ends' }, after: 2 }], clock)
    const model = shallotModel(chatModel(server), { clock })
    const streamed = await run(new Agent({ name: 'a', model }), 'hi', { stream: true })
    for await (const event of streamed) if (event.type === 'raw_model_stream_event') break
    await vi.waitFor(() => expect(server.requests[0]?.outcome).toBe('client_closed'))
  })

  it('refuses what it cannot wrap, and options it does not know, naming the fix', () => {
    expect(() => shallotModel('gpt-4o' as never)).toThrow(/shallotModelProvider\(\)/)
    expect(() => shallotModel({} as never)).toThrow(/getResponse\(\)/)
    const model = new OpenAIChatCompletionsModel(new OpenAI({ apiKey: 'sk-x' }), 'gpt-4o')
    expect(() => shallotModel(model, { maxRetries: 3 } as never)).toThrow(OptionsError)
    expect(() => shallotModel(model, { modelMiddleware: [42] } as never)).toThrow(/modelMiddleware/)
    expect(() => spareModel(model, '')).toThrow(/name/)
  })
})

describe('shallotModelProvider: models by name, one onion', { timeout: 20_000 }, () => {
  it('runs a named model of a Runner through the layers, on the Responses API too', async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'server_error', status: 503 }, { text: 'via responses' }], clock)
    const modelProvider = shallotModelProvider({
      provider: new OpenAIProvider({ openAIClient: clientOf(server), useResponses: true }),
      clock,
    })
    const runner = new Runner({ modelProvider, tracingDisabled: true })
    const result = await driven(clock, runner.run(new Agent({ name: 'a', model: 'gpt-4o' }), 'hi'))
    expect(result.finalOutput).toBe('via responses')
    expect(server.requests.map((r) => [r.api, r.model])).toEqual([
      ['openai-responses', 'gpt-4o'],
      ['openai-responses', 'gpt-4o'],
    ])
  })

  it('names the provider when it makes something that is not a model, and asks it again next time', async () => {
    let asked = 0
    const modelProvider = shallotModelProvider({
      provider: {
        getModel: () => {
          asked++
          return {} as never
        },
      },
    })
    await expect(modelProvider.getModel('gpt-4o')).rejects.toThrow("shallotModelProvider(): the provider's getModel('gpt-4o')")
    await expect(modelProvider.getModel('gpt-4o')).rejects.toThrow(TypeError)
    expect(asked).toBe(2)
    expect(() => shallotModelProvider({ provider: 'openai' } as never)).toThrow(OptionsError)
  })

  it('keeps one breaker per model name across runs: three failed runs open it, the fourth sends nothing', async () => {
    const clock = manualClock()
    const server = await serve([{ fault: 'server_error', status: 503 }], clock, 'repeat')
    const modelProvider = shallotModelProvider({
      provider: new OpenAIProvider({ openAIClient: clientOf(server), useResponses: false }),
      clock,
      modelMiddleware: defaultModelMiddleware({ retry: false }),
    })
    const runner = new Runner({ modelProvider, tracingDisabled: true })
    const agent = new Agent({ name: 'a', model: 'gpt-4o' })
    for (let i = 0; i < 3; i++) await driven(clock, runner.run(agent, 'hi')).catch(() => {})
    const fourth = await driven(clock, runner.run(agent, 'hi')).catch((e: unknown) => e)
    expect(LoopError.is(fourth) && fourth.kind).toBe('model_failed')
    expect(String((fourth as LoopError).message)).toMatch(/circuit/)
    expect(server.requests).toHaveLength(3)
  })
})
