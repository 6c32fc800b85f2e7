import { SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { AgentEvent } from '@shallot/agent'
import { defineTool, type ModelAdapter, type ModelRequest, type ModelResponse, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { createAgent, defaultModelMiddleware } from 'shallot'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const parentOf = (spans: ReadableSpan[], name: string) => {
  const span = spans.find((s) => s.name === name)
  return spans.find((s) => s.spanContext().spanId === span?.parentSpanContext?.spanId)?.name
}

/** A tool whose HTTP client starts a span of its own, the way an instrumented fetch does. */
const search = defineTool({
  name: 'search',
  description: 'Search',
  input: z.object({ q: z.string() }),
  effect: 'read',
  execute: ({ q }) => {
    const span = trace.getTracer('http-client').startSpan('GET /search')
    span.end()
    return `1 result for ${q}`
  },
})

/** A model whose SDK starts its own HTTP span per request; `reply` answers from the transcript. */
function sdkModel(reply: (request: ModelRequest) => ModelResponse, provider = 'openai.chat'): ModelAdapter {
  return {
    name: 'gpt-4o-mini',
    provider,
    async generate(request) {
      const span = trace.getTracer('http-client').startSpan('POST /v1/chat/completions')
      await Promise.resolve()
      span.end()
      return reply(request)
    },
  }
}

/** Searches first, answers once the search result is in the transcript. */
const searchThenAnswer =
  () =>
  (request: ModelRequest): ModelResponse =>
    request.messages.at(-1)?.role === 'tool'
      ? { text: 'Refunds take 5 days.', finishReason: 'stop' }
      : { toolCalls: [{ id: 's1', name: 'search', args: { q: 'refunds' } }], finishReason: 'tool_calls' }

describe('the run’s context flows into the model and the tools', () => {
  it('a model SDK’s span is a child of its chat span, a tool’s of its execute_tool span, both under invoke_agent', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({
      model: sdkModel(searchThenAnswer()),
      tools: [search],
      middleware: [tracing],
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    expect(await agent.run({ input: 'refunds?', runId: 'r1' })).toMatchObject({ status: 'completed' })
    const spans = sdk.spans()
    const requests = spans.filter((s) => s.name === 'POST /v1/chat/completions')
    expect(requests).toHaveLength(2)
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini')
    expect(requests.map((s) => s.parentSpanContext?.spanId)).toEqual(chats.map((s) => s.spanContext().spanId))
    expect(parentOf(spans, 'GET /search')).toBe('execute_tool search')
    expect(parentOf(spans, 'execute_tool search')).toBe('invoke_agent')
    expect(parentOf(spans, 'chat gpt-4o-mini')).toBe('invoke_agent')
    // One trace, from the run down.
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)
    // The chat span is opened before the request, so it contains it.
    const [chat] = chats
    const [request] = requests
    expect(chat?.startTime[0]).toBeLessThanOrEqual(request?.startTime[0] ?? 0)
  })

  it('with only attach (no otel() layer), a tool’s own span is still inside its run: a child of invoke_agent', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({ model: sdkModel(searchThenAnswer()), tools: [search], onEvent: tracing.onAgentEvent })
    tracing.attach(agent.stack)
    await agent.run({ input: 'refunds?' })
    const spans = sdk.spans()
    expect(parentOf(spans, 'GET /search')).toBe('invoke_agent')
    expect(parentOf(spans, 'execute_tool search')).toBe('invoke_agent')
  })

  it('two concurrent runs keep their spans apart', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({
      model: sdkModel(searchThenAnswer()),
      tools: [search],
      middleware: [tracing],
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    await Promise.all([agent.run({ input: 'a', runId: 'a' }), agent.run({ input: 'b', runId: 'b' })])
    const spans = sdk.spans()
    const runs = spans.filter((s) => s.name === 'invoke_agent')
    expect(runs).toHaveLength(2)
    for (const run of runs) {
      const inTrace = spans.filter((s) => s.spanContext().traceId === run.spanContext().traceId).map((s) => s.name)
      expect(inTrace.sort()).toEqual(
        [
          'GET /search',
          'POST /v1/chat/completions',
          'POST /v1/chat/completions',
          'chat gpt-4o-mini',
          'chat gpt-4o-mini',
          'execute_tool search',
          'invoke_agent',
        ].sort(),
      )
    }
  })

  it('a cancelled run ends its attempt’s chat span with the run instead of leaving it open', async () => {
    sdk = otelSdk()
    const clock = manualClock()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const hangs: ModelAdapter = { name: 'slow', generate: () => new Promise(() => {}) }
    const agent = createAgent({ model: hangs, tools: [search], clock, onEvent: tracing.onAgentEvent })
    tracing.attach(agent.stack)
    const stop = new AbortController()
    const run = agent.run({ input: 'x', signal: stop.signal })
    await clock.advance(5)
    stop.abort(new Error('user left'))
    expect(await run).toMatchObject({ status: 'stopped' })
    const chat = sdk.spans().find((s) => s.name === 'chat slow')
    expect(chat?.attributes['error.type']).toBe('cancelled')
    expect(sdk.spans().find((s) => s.name === 'invoke_agent')?.attributes).toMatchObject({ 'error.type': 'cancelled' })
  })

  it('a span processor that throws on start or end changes no outcome', async () => {
    sdk = otelSdk()
    const throwing: SpanProcessor = {
      onStart: () => {
        throw new Error('processor down')
      },
      onEnd: () => {
        throw new Error('processor down')
      },
      forceFlush: async () => {},
      shutdown: async () => {},
    }
    const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base')
    const tracer = new BasicTracerProvider({ spanProcessors: [throwing] }).getTracer('broken')
    const tracing = otel({ tracer, meter: sdk.meter })
    const agent = createAgent({
      model: sdkModel(searchThenAnswer()),
      tools: [search],
      middleware: [tracing],
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    expect(await agent.run({ input: 'refunds?' })).toMatchObject({ status: 'completed', output: 'Refunds take 5 days.' })
  })

  it('a tracer whose startSpan throws costs the context, never the run', async () => {
    sdk = otelSdk()
    const tracer = {
      startSpan: () => {
        throw new Error('tracer down')
      },
      startActiveSpan: () => {
        throw new Error('tracer down')
      },
    } as unknown as Tracer
    const tracing = otel({ tracer, meter: sdk.meter })
    const agent = createAgent({
      model: sdkModel(searchThenAnswer()),
      tools: [search],
      middleware: [tracing],
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    expect(await agent.run({ input: 'refunds?' })).toMatchObject({ status: 'completed' })
  })

  it('a wrapper listener that forwards within keeps the context', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const seen: string[] = []
    const mine = Object.assign(
      (e: AgentEvent) => {
        seen.push(e.type)
        tracing.onAgentEvent(e)
      },
      { within: tracing.onAgentEvent.within },
    )
    const agent = createAgent({ model: sdkModel(searchThenAnswer()), tools: [search], middleware: [tracing], onEvent: mine })
    tracing.attach(agent.stack)
    await agent.run({ input: 'x' })
    expect(parentOf(sdk.spans(), 'POST /v1/chat/completions')).toBe('chat gpt-4o-mini')
    expect(seen[0]).toBe('run.started')
  })
})

describe('gen_ai.provider.name', () => {
  it.each([
    ['openai.chat', 'openai'],
    ['openai.responses', 'openai'],
    ['anthropic.messages', 'anthropic'],
    ['amazon-bedrock', 'aws.bedrock'],
    ['google.vertex.chat', 'gcp.vertex_ai'],
    ['google.generative-ai', 'gcp.gemini'],
    ['azure-openai.chat', 'azure.ai.openai'],
    ['mistral.chat', 'mistral_ai'],
    ['xai.chat', 'x_ai'],
    ['aws.bedrock', 'aws.bedrock'],
    ['My Local LLM', 'my_local_llm'],
  ])('a model whose provider is %s is %s on its chat span, its metrics and its run', async (provider, expected) => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({
      model: sdkModel(() => ({ text: 'hi', usage: { inputTokens: 3 } }), provider),
      tools: [],
      onEvent: tracing.onAgentEvent,
    })
    await agent.run({ input: 'x' })
    const spans = sdk.spans()
    expect(spans.find((s) => s.name === 'chat gpt-4o-mini')?.attributes['gen_ai.provider.name']).toBe(expected)
    expect(spans.find((s) => s.name === 'invoke_agent')?.attributes['gen_ai.provider.name']).toBe(expected)
    const usage = await sdk.points('gen_ai.client.token.usage')
    expect(usage?.dataPoints[0]?.attributes['gen_ai.provider.name']).toBe(expected)
  })

  it('is left out when the model names no provider, and never carries a secret', async () => {
    sdk = otelSdk()
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter, secrets: ['hunter2'] })
    const anonymous: ModelAdapter = { name: 'local', generate: async () => ({ text: 'hi' }) }
    const leaky = { ...sdkModel(() => ({ text: 'hi' }), 'proxy sk-live-abcdefghijklmnop1234 hunter2'), name: 'leaky' }
    const agent = createAgent({ model: anonymous, tools: [], onEvent: tracing.onAgentEvent })
    await agent.run({ input: 'x' })
    const local = sdk.spans().find((s) => s.name === 'chat local')
    expect(local?.attributes).not.toHaveProperty('gen_ai.provider.name')
    const agent2 = createAgent({ model: leaky, tools: [], onEvent: tracing.onAgentEvent })
    await agent2.run({ input: 'x' })
    const name = String(sdk.spans().find((s) => s.name === 'chat leaky')?.attributes['gen_ai.provider.name'])
    expect(name).not.toContain('hunter2')
    expect(name).not.toContain('abcdefghijklmnop1234')
    expect(name).toMatch(/^[a-z0-9._-]{1,64}$/)
  })
})

describe('a failed model attempt’s error.type', () => {
  it('is the classified code: rate_limited, the HTTP status, timeout (the agent’s deadline), a Node code', async () => {
    sdk = otelSdk()
    const clock = manualClock()
    const failures: Array<() => Promise<ModelResponse>> = [
      async () => {
        throw new ToolError('rate_limited', 'slow down', { category: 'transient', retryAfterMs: 10 })
      },
      // A failed connection is retried within the first 3 attempts only (a wrong URL is not an outage), so it comes second.
      async () => {
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
      },
      async () => {
        throw Object.assign(new Error('Service Unavailable'), { status: 503 })
      },
      () => new Promise(() => {}),
    ]
    let i = 0
    const model: ModelAdapter = {
      name: 'gpt-4o-mini',
      provider: 'openai.chat',
      generate: () => (failures[i++] ?? (async () => ({ text: 'finally' })))(),
    }
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({
      model,
      tools: [],
      clock,
      random: () => 0,
      modelMiddleware: defaultModelMiddleware({ timeout: { ms: 1_000 }, retry: { maxAttempts: 5 } }),
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    let done = false
    const run = agent.run({ input: 'x' }).finally(() => {
      done = true
    })
    for (let step = 0; step < 100 && !done; step++) await clock.advance(100)
    expect(await run).toMatchObject({ status: 'completed', output: 'finally' })
    const chats = sdk.spans().filter((s) => s.name === 'chat gpt-4o-mini')
    expect(chats.map((s) => s.attributes['error.type'])).toEqual(['rate_limited', 'ECONNRESET', '503', 'timeout', undefined])
    expect(chats.map((s) => s.status.code)).toEqual([
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.UNSET,
    ])
    const duration = await sdk.points('gen_ai.client.operation.duration')
    expect(duration?.dataPoints.map((p) => p.attributes['error.type']).sort()).toEqual(
      ['rate_limited', '503', 'timeout', 'ECONNRESET', undefined].sort(),
    )
  })

  it('a huge error message with secrets reaches the span status sanitized and capped, never error.type', async () => {
    sdk = otelSdk()
    const huge = `${'x'.repeat(200_000)} upstream http://10.0.0.7/v1 key sk-live-abcdefghijklmnop1234 password=hunter2`
    const model: ModelAdapter = {
      name: 'gpt-4o-mini',
      async generate() {
        throw Object.assign(new Error(huge), { status: 400 })
      },
    }
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter, secrets: ['hunter2'] })
    const agent = createAgent({ model, tools: [], onEvent: tracing.onAgentEvent })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'stopped' })
    const chat = sdk.spans().find((s) => s.name === 'chat gpt-4o-mini')
    expect(chat?.attributes['error.type']).toBe('400')
    const message = chat?.status.message ?? ''
    expect(message.length).toBeLessThanOrEqual(1_100)
    expect(message).not.toContain('sk-live-abcdefghijklmnop1234')
    expect(message).not.toContain('10.0.0.7')
    const all = JSON.stringify(sdk.spans().map((s) => [s.attributes, s.status, s.events]))
    expect(all).not.toContain('hunter2')
    expect(all).not.toContain('abcdefghijklmnop1234')
  })
})
