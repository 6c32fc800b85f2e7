import { LoopError, type ModelEvent } from '@shallot/core'
import { type FakeProvider, type FakeProviderOptions, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { APICallError, generateText, simulateReadableStream, streamText } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { defaultModelMiddleware } from 'shallot'
import { afterEach, describe, expect, it } from 'vitest'
import { shallotModel } from './index.js'
import { type Format, formats } from './wire-formats.test-helper.js'

// shallotModel() in front of the real provider packages, against fakeProvider() on the manual clock: the retry
// layer's sleeps and the deadlines run on it, so a Retry-After of 1 s costs no real second. Shared by ai 6
// (shallot-model.test.ts) and ai 7 with its version 4 providers (shallot-model.node22.test.ts).

const providers: FakeProvider[] = []
let clock: ManualClock
async function provider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const p = await fakeProvider({ now: () => clock.now(), ...options })
  providers.push(p)
  return p
}
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()))
})

/** The events of the layers; each retry's sleep is waited out on the manual clock the moment it starts. */
function onEvent(events: ModelEvent[] = []) {
  return (event: ModelEvent) => {
    events.push(event)
    if (event.type === 'model.retry') void clock.advance(event.delayMs)
  }
}

const outage = [1, 2, 3].map(() => ({ fault: 'rate_limit', retryAfterSeconds: 1 }) as const)
/** Four attempts: the three 429s of the outage and the request that gets through. */
const fourAttempts = () => defaultModelMiddleware({ retry: { maxAttempts: 4 } })

async function settled<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await work }
  } catch (error) {
    return { error }
  }
}

describe.each(formats)('shallotModel, $name', (format: Format) => {
  it('generateText survives three 429s with Retry-After: 1, each repeat no sooner than 1 s after the 429', async () => {
    clock = manualClock(10_000)
    const p = await provider()
    p.script(...outage, { text: 'hello' })
    const events: ModelEvent[] = []
    const model = shallotModel(format.model(p), { modelMiddleware: fourAttempts(), clock, random: () => 0, onEvent: onEvent(events) })
    const { text } = await generateText({ model, prompt: 'say hello' })
    expect(text).toBe('hello')
    expect(p.requests.map((r) => r.outcome)).toEqual(['faulted', 'faulted', 'faulted', 'replied'])
    const at = p.requests.map((r) => r.at)
    for (let i = 1; i < at.length; i++) expect((at[i] as number) - (at[i - 1] as number)).toBeGreaterThanOrEqual(1000)
    expect(events.filter((e) => e.type === 'model.retry').map((e) => (e as { retryAfterMs?: number }).retryAfterMs)).toEqual([
      1000, 1000, 1000,
    ])
  })

  it('streamText survives three 429s before its first chunk and streams the answer', async () => {
    clock = manualClock(10_000)
    const p = await provider()
    p.script(...outage, { text: 'streamed hello' })
    const model = shallotModel(format.model(p), { modelMiddleware: fourAttempts(), clock, random: () => 0, onEvent: onEvent() })
    const result = streamText({ model, prompt: 'say hello', onError: () => {} })
    const types: string[] = []
    for await (const part of result.fullStream) types.push(part.type)
    expect(await result.text).toBe('streamed hello')
    expect(types).not.toContain('error')
    expect(p.requests.map((r) => [r.stream, r.outcome])).toEqual([
      [true, 'faulted'],
      [true, 'faulted'],
      [true, 'faulted'],
      [true, 'replied'],
    ])
  })

  it("does not retry a 401, whatever the SDK's maxRetries: one request, and generateText rejects with user_input_required", async () => {
    clock = manualClock()
    const p = await provider()
    p.script({ fault: 'authentication' }, { text: 'never' })
    const model = shallotModel(format.model(p), { clock, onEvent: onEvent() })
    const { error } = await settled(generateText({ model, prompt: 'hi', maxRetries: 2 }))
    expect(LoopError.is(error) && error.kind).toBe('user_input_required')
    expect(APICallError.isInstance(error)).toBe(false)
    expect(p.requests).toHaveLength(1)
  })

  it("a failing model costs shallot's attempts and no more: the SDK's own retries never repeat the verdict", async () => {
    clock = manualClock()
    const p = await provider({ onEnd: 'repeat', script: [{ fault: 'server_error' }] })
    const model = shallotModel(format.model(p), { clock, random: () => 0, onEvent: onEvent() })
    const { error } = await settled(generateText({ model, prompt: 'hi', maxRetries: 2 }))
    expect(LoopError.is(error) && error.kind).toBe('model_failed')
    // The default model stack rides the outage out for two minutes (at most 21 requests); every request is one of its attempts.
    expect((error as LoopError).message).toMatch(new RegExp(`after ${p.requests.length} attempts`))
    expect(p.requests.length).toBeGreaterThan(3)
    expect(p.requests.length).toBeLessThanOrEqual(21)
  })

  it('never repeats a stream that failed after its first chunk: the caller sees its text, then the error', async () => {
    clock = manualClock()
    const p = await provider()
    p.script({ fault: 'stream_error', reply: { text: 'one two three four five six seven eight' }, after: 7 }, { text: 'second' })
    const model = shallotModel(format.model(p), { clock, random: () => 0, onEvent: onEvent() })
    const errors: unknown[] = []
    const result = streamText({
      model,
      prompt: 'count',
      onError: ({ error }) => {
        errors.push(error)
      },
    })
    const types: string[] = []
    for await (const part of result.fullStream) types.push(part.type)
    expect(types).toContain('text-delta')
    expect(types.indexOf('error')).toBeGreaterThan(types.indexOf('text-delta'))
    expect(errors).toHaveLength(1)
    expect(p.requests).toHaveLength(1)
  })

  it('repeats a stream whose first part is an error, before anything reached the caller', async () => {
    clock = manualClock()
    const p = await provider()
    p.script({ fault: 'stream_error', after: 0 }, { text: 'recovered' })
    const model = shallotModel(format.model(p), { clock, random: () => 0, onEvent: onEvent() })
    const result = streamText({ model, prompt: 'hi', onError: () => {} })
    expect(await result.text).toBe('recovered')
    expect(p.requests.map((r) => r.outcome)).toEqual(['faulted', 'replied'])
  })
})

type StreamChunks = Parameters<typeof simulateReadableStream>[0]['chunks']
const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
}
const finish = { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage }
const textParts = (text: string) => [
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: text },
  { type: 'text-end', id: 't' },
]

/** The SDK's own mock model, streaming each script entry in turn. */
function streamingModel(script: StreamChunks[]) {
  let calls = 0
  const model = new MockLanguageModelV3({
    doStream: async () => ({ stream: simulateReadableStream({ chunks: script[Math.min(calls++, script.length - 1)] as never }) }),
  })
  return { model, calls: () => calls }
}

describe('shallotModel streams, part by part (the SDK mock model)', () => {
  it('repeats a stream whose first part after the preamble is an error part', async () => {
    clock = manualClock()
    const { model, calls } = streamingModel([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: 'r1' },
        { type: 'error', error: { type: 'overloaded_error', message: 'busy' } },
      ],
      [{ type: 'stream-start', warnings: [] }, ...textParts('recovered'), finish],
    ])
    const wrapped = shallotModel(model, { clock, random: () => 0, onEvent: onEvent() })
    expect(await streamText({ model: wrapped, prompt: 'hi', onError: () => {} }).text).toBe('recovered')
    expect(calls()).toBe(2)
  })

  it('hands on an error part after the first chunk as it came, and asks once', async () => {
    clock = manualClock()
    const { model, calls } = streamingModel([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'error', error: { type: 'server_error' } },
      ],
    ])
    const errors: unknown[] = []
    const result = streamText({
      model: shallotModel(model, { clock }),
      prompt: 'hi',
      onError: ({ error }) => {
        errors.push(error)
      },
    })
    await result.consumeStream()
    expect(errors).toEqual([{ type: 'server_error' }])
    expect(calls()).toBe(1)
  })

  it('settles a stream that ends with no output at all: the caller gets its end, no attempt is repeated', async () => {
    clock = manualClock()
    const { model, calls } = streamingModel([[{ type: 'stream-start', warnings: [] }]])
    const result = streamText({ model: shallotModel(model, { clock }), prompt: 'hi', onError: () => {} })
    await result.consumeStream()
    expect(calls()).toBe(1)
  })
})
