import { SpanStatusCode, trace } from '@opentelemetry/api'
import { createAgent } from '@shallot/agent'
import { type ModelAdapter, OptionsError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, expect, it } from 'vitest'
import { otelSdk } from '../test/world.js'
import { instrumentAgent, instrumentModel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const request = { messages: [{ role: 'user' as const, content: 'hi' }], tools: [], signal: new AbortController().signal }

it('times a model call on the given clock, and records no token metric when the adapter reports no usage', async () => {
  sdk = otelSdk()
  const clock = manualClock()
  const slow: ModelAdapter = {
    async generate() {
      await clock.sleep(1_500)
      return { text: 'done' }
    },
  }
  const model = instrumentModel(slow, { model: 'm-1', tracer: sdk.tracer, meter: sdk.meter, clock })
  const pending = model.generate(request)
  await clock.advance(1_500)
  await expect(pending).resolves.toEqual({ text: 'done' })
  const [span] = sdk.spans()
  expect(span?.name).toBe('chat m-1')
  expect(span?.attributes).toEqual({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'm-1',
    'shallot.model.tool_calls': 0,
  })
  const [s, ns] = span?.duration ?? [0, 0]
  expect(s * 1000 + ns / 1e6).toBeCloseTo(1_500, 3)
  expect((await sdk.points('gen_ai.client.token.usage'))?.dataPoints ?? []).toEqual([])
  expect((await sdk.points('gen_ai.client.operation.duration'))?.dataPoints[0]?.value).toMatchObject({ count: 1, sum: 1.5 })
})

it('ignores usage that is not a count (NaN, negative, a string) instead of recording it', async () => {
  sdk = otelSdk()
  const odd: ModelAdapter = {
    generate: async () => ({ text: 'x', usage: { inputTokens: Number.NaN, outputTokens: -3 }, finishReason: 7 }) as never,
  }
  await instrumentModel(odd, { model: 'm', tracer: sdk.tracer, meter: sdk.meter }).generate(request)
  const attributes = sdk.spans()[0]?.attributes ?? {}
  expect(attributes['gen_ai.usage.input_tokens']).toBeUndefined()
  expect(attributes['gen_ai.usage.output_tokens']).toBeUndefined()
  expect(attributes['gen_ai.response.finish_reasons']).toBeUndefined()
})

it('a model that throws synchronously, or throws a non-Error, is an ERROR span and the same rejection', async () => {
  sdk = otelSdk()
  const sync: ModelAdapter = {
    generate() {
      throw Object.assign(new TypeError('bad key sk-ant-api03-abcdefghijklmnopqrstuvwx'), { code: 'ERR_AUTH' })
    },
  }
  const weird: ModelAdapter = { generate: () => Promise.reject('just a string') }
  await expect(instrumentModel(sync, { model: 'm', tracer: sdk.tracer, meter: sdk.meter }).generate(request)).rejects.toThrow(TypeError)
  await expect(instrumentModel(weird, { model: 'm', tracer: sdk.tracer, meter: sdk.meter }).generate(request)).rejects.toBe('just a string')
  const [first, second] = sdk.spans()
  expect(first?.attributes['error.type']).toBe('ERR_AUTH')
  expect(first?.status.code).toBe(SpanStatusCode.ERROR)
  expect(first?.status.message).not.toContain('sk-ant')
  expect(second?.attributes['error.type']).toBe('_OTHER')
})

it("makes the adapter's own spans children of the chat span", async () => {
  sdk = otelSdk()
  const traced: ModelAdapter = {
    async generate() {
      trace.getTracer('http').startSpan('POST /v1/chat').end()
      return { text: 'ok' }
    },
  }
  await instrumentModel(traced, { model: 'm', tracer: sdk.tracer }).generate(request)
  const [http, chat] = sdk.spans()
  expect(http?.parentSpanContext?.spanId).toBe(chat?.spanContext().spanId)
  expect(trace.getActiveSpan()).toBeUndefined()
})

it('an agent whose run rejects (bad input) ends its span as ERROR and rethrows', async () => {
  sdk = otelSdk()
  const agent = instrumentAgent(createAgent({ model: { generate: async () => ({ text: 'x' }) }, tools: [] }), { tracer: sdk.tracer })
  await expect(agent.run({ input: 42 as never })).rejects.toThrow(/input must be a string/)
  const [span] = sdk.spans()
  expect(span?.name).toBe('invoke_agent')
  expect(span?.attributes).toMatchObject({ 'error.type': 'TypeError', 'shallot.run.resumed': false })
  expect(span?.status.code).toBe(SpanStatusCode.ERROR)
})

it('refuses what is not a model, an agent or a valid option, naming it', () => {
  const model: ModelAdapter = { generate: async () => ({}) }
  expect(() => instrumentModel({} as ModelAdapter, { model: 'm' })).toThrow(/instrumentModel\(\): model must be an object with generate/)
  expect(() => instrumentModel(model, { model: '' })).toThrow(OptionsError)
  expect(() => instrumentModel(model, {} as never)).toThrow(/model/)
  expect(() => instrumentModel(model, { model: 'm', clock: {} as never })).toThrow(/clock/)
  expect(() => instrumentAgent({} as never)).toThrow(/instrumentAgent\(\): agent must be what createAgent\(\) returns/)
})
