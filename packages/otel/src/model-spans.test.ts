import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, type ModelMiddleware, type ModelResponse, ToolError } from '@shallot/core'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel, otelDefinition } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const echo = defineTool({ name: 'echo', description: 'Echo', input: z.object({}), effect: 'read', execute: () => 'ok' })
const answer: ModelResponse = { text: 'done', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 120, outputTokens: 7 } }
const status = (s: number) =>
  Object.assign(new Error(`HTTP ${s} from https://api.example.com?key=sk-live-abcdefghijklmnopqrstuvwx`), { status: s })

/** A model that plays `steps` in order and starts its HTTP client's span on every request, as an instrumented SDK does. */
function model(steps: Array<ModelResponse | Error>, provider = 'openai.chat'): ModelAdapter & { calls: number } {
  const m = {
    name: 'gpt-4o-mini',
    provider,
    calls: 0,
    async generate() {
      const step = steps[Math.min(m.calls++, steps.length - 1)] as ModelResponse | Error
      trace.getTracer('http-client').startSpan('POST /v1/chat/completions').end()
      if (step instanceof Error) throw step
      return step
    },
  }
  return m
}

/** Repeats next() once after a failure, bumping the attempt: the shape of a retry layer. */
const retryOnce: ModelMiddleware = async (ctx, next) => {
  try {
    await next()
  } catch {
    ctx.attempt++
    await next()
  }
}

const chats = (spans: ReadableSpan[]) => spans.filter((s) => s.name.startsWith('chat '))
const parentName = (spans: ReadableSpan[], span: ReadableSpan | undefined) =>
  spans.find((s) => s.spanContext().spanId === span?.parentSpanContext?.spanId)?.name

describe('otel() in modelMiddleware: a chat span per model call, by the GenAI conventions', () => {
  it('one CLIENT span per attempt inside a retry, under the run, with tokens, provider, and error.type on the failed one', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const m = model([status(503), answer])
    const outcome = await createAgent({
      model: m,
      tools: [echo],
      modelMiddleware: [retryOnce, tracing],
      onEvent: tracing.onAgentEvent,
    }).run({
      input: 'go',
    })
    expect(outcome.status).toBe('completed')
    const spans = sdk.spans()
    // Once per attempt: the agent listener opens no chat span of its own for a run the layer traces.
    const [failed, ok] = chats(spans)
    expect(chats(spans)).toHaveLength(2)
    for (const span of [failed, ok]) {
      expect(span?.name).toBe('chat gpt-4o-mini')
      expect(span?.kind).toBe(SpanKind.CLIENT)
      expect(parentName(spans, span)).toBe('invoke_agent')
      expect(span?.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.provider.name': 'openai',
      })
    }
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR)
    expect(failed?.attributes['error.type']).toBe('503')
    expect(failed?.attributes['shallot.model.attempt']).toBe(1)
    expect(failed?.status.message).not.toContain('sk-live')
    expect(ok?.status.code).not.toBe(SpanStatusCode.ERROR)
    expect(ok?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['stop'],
      'shallot.model.attempt': 2,
    })
    // The SDK's own span is a child of the attempt's chat span.
    const http = spans.filter((s) => s.name === 'POST /v1/chat/completions')
    expect(http.map((s) => parentName(spans, s))).toEqual(['chat gpt-4o-mini', 'chat gpt-4o-mini'])
    const duration = await sdk.points('gen_ai.client.operation.duration')
    const points = duration?.dataPoints.filter((p) => p.attributes['gen_ai.operation.name'] === 'chat') ?? []
    expect(points.map((p) => p.attributes['error.type']).sort()).toEqual(['503', undefined])
  })

  it('outside the retry it is one span for the logical call, ending on the attempt that answered', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    await createAgent({
      model: model([status(429), answer]),
      tools: [echo],
      modelMiddleware: [tracing, retryOnce],
      onEvent: tracing.onAgentEvent,
    }).run({
      input: 'go',
    })
    const [only] = chats(sdk.spans())
    expect(chats(sdk.spans())).toHaveLength(1)
    expect(only?.attributes['shallot.model.attempt']).toBe(2)
    expect(only?.status.code).not.toBe(SpanStatusCode.ERROR)
  })

  it('names a classified failure by its code, and the run ends with its span in error too', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const limited = new ToolError('rate_limited', 'rate limited by the provider', {
      category: 'transient',
      retryable: true,
      retryAfterMs: 1000,
    })
    const outcome = await createAgent({
      model: model([limited]),
      tools: [echo],
      modelMiddleware: tracing,
      onEvent: tracing.onAgentEvent,
    }).run({
      input: 'go',
    })
    expect(outcome.status).toBe('stopped')
    const spans = sdk.spans()
    const [chat] = chats(spans)
    expect(chat?.attributes['error.type']).toBe('rate_limited')
    expect(chat?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'rate limited by the provider' })
    expect(spans.find((s) => s.name === 'invoke_agent')?.attributes['error.type']).toBe('model_failed')
  })

  it('without the agent listener, the span is a child of whatever span is active around the run', async () => {
    sdk = otelSdk()
    const { tracer } = sdk
    const layer = otelDefinition.buildModel({})
    const request = tracer.startSpan('POST /support')
    await context.with(trace.setSpan(context.active(), request), () =>
      createAgent({ model: model([answer], 'anthropic'), tools: [echo], modelMiddleware: layer }).run({ input: 'go' }),
    )
    request.end()
    const spans = sdk.spans()
    const [chat] = chats(spans)
    expect(parentName(spans, chat)).toBe('POST /support')
    expect(chat?.attributes['gen_ai.provider.name']).toBe('anthropic')
  })

  it('a tracer that throws costs the trace, never the call; a secret in the model name is redacted', async () => {
    sdk = otelSdk()
    const broken = {
      startSpan() {
        throw new Error('exporter down')
      },
    } as unknown as Tracer
    const m = model([answer])
    const outcome = await createAgent({ model: m, tools: [echo], modelMiddleware: otel({ tracer: broken }) }).run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    const secret = 'tenant-key-0123456789abcdef'
    const named = { ...model([answer]), name: `ft:gpt-4o:${secret}` }
    await createAgent({ model: named, tools: [echo], modelMiddleware: otel({ tracer: sdk.tracer, secrets: [secret] }) }).run({
      input: 'go',
    })
    const [chat] = chats(sdk.spans())
    expect(chat?.name).not.toContain(secret)
    expect(String(chat?.attributes['gen_ai.request.model'])).not.toContain(secret)
  })

  it('parallel runs through one layer keep their spans apart', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({ model: model([answer]), tools: [echo], modelMiddleware: tracing, onEvent: tracing.onAgentEvent })
    await Promise.all([agent.run({ input: 'a' }), agent.run({ input: 'b' }), agent.run({ input: 'c' })])
    const spans = sdk.spans()
    const runs = spans.filter((s) => s.name === 'invoke_agent')
    expect(runs).toHaveLength(3)
    for (const run of runs) {
      const children = chats(spans).filter((c) => c.parentSpanContext?.spanId === run.spanContext().spanId)
      expect(children).toHaveLength(1)
      expect(children[0]?.attributes['shallot.run.id']).toBe(run.attributes['shallot.run.id'])
    }
  })
})
