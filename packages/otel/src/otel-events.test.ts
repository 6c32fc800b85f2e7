import { SpanStatusCode, trace } from '@opentelemetry/api'
import { createAgent } from '@shallot/agent'
import { createStack, defineTool, type Middleware, type ModelResponse, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const seenSpans: Array<string | undefined> = []
const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => {
    seenSpans.push(trace.getActiveSpan()?.spanContext().spanId)
    return text
  },
})

it('attached, otel() inside another layer still traces the whole call: the outer layer’s time and events are in the span', async () => {
  sdk = otelSdk()
  seenSpans.length = 0
  const clock = manualClock()
  const outer: Middleware = async function outer(ctx, next) {
    ctx.emit('outer.queued', { position: 2 })
    await ctx.clock.sleep(300)
    await next()
  }
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const stack = createStack({ tools: [echo], clock, middleware: [outer, tracing] })
  tracing.attach(stack)
  const pending = stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
  await clock.advance(300)
  expect(await pending).toMatchObject({ ok: true, value: 'hi' })
  const spans = sdk.spans()
  expect(spans.map((s) => s.name)).toEqual(['execute_tool echo'])
  const [span] = spans
  expect(span?.duration).toEqual([0, 300_000_000])
  expect(span?.events.map((e) => [e.name, e.attributes])).toEqual([['outer.queued', { position: 2 }]])
  expect(span?.attributes).toMatchObject({
    'gen_ai.tool.name': 'echo',
    'gen_ai.tool.call.id': 'c1',
    'shallot.tool.effect': 'read',
    'shallot.outcome': 'ok',
    'shallot.tool.attempts': 1,
  })
  // The span is the active context of the tool, though otel() is not outermost.
  expect(seenSpans).toEqual([span?.spanContext().spanId])
  const duration = await sdk.points('gen_ai.client.operation.duration')
  expect(duration?.dataPoints[0]?.attributes).toEqual({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo' })
})

it('attached, a soft error outside otel() (a policy refusal before it) is still a span with error.type', async () => {
  sdk = otelSdk()
  const refuse: Middleware = async function refuse(ctx, next) {
    if (ctx.call.name === 'blocked') {
      ctx.emit('policy.refused', { reason: 'deny list' })
      throw new ToolError('permission_denied', 'blocked by policy', { category: 'recoverable' })
    }
    await next()
  }
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const stack = createStack({ tools: [echo], middleware: [refuse, tracing] })
  const detach = tracing.attach(stack)
  await stack.dispatch({ id: 'c1', name: 'blocked', args: {} })
  const [span] = sdk.spans()
  expect(span?.name).toBe('execute_tool blocked')
  expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'blocked by policy' })
  expect(span?.attributes).toMatchObject({ 'error.type': 'permission_denied', 'shallot.outcome': 'soft_error' })
  expect(span?.events.map((e) => e.name)).toEqual(['policy.refused'])
  // Detached and not outermost, it sees only what is inside it: the refusal makes no span.
  detach()
  detach()
  await stack.dispatch({ id: 'c2', name: 'blocked', args: {} })
  expect(sdk.spans()).toHaveLength(1)
})

it('as an agent’s onEvent it makes invoke_agent with token totals and chat spans, no model or agent wrapper', async () => {
  sdk = otelSdk()
  const clock = manualClock()
  const replies: ModelResponse[] = [
    {
      toolCalls: [{ id: 't1', name: 'echo', args: { text: 'a' } }],
      usage: { inputTokens: 100, outputTokens: 10 },
      finishReason: 'tool_calls',
    },
    { text: 'done', usage: { inputTokens: 120, outputTokens: 4 }, finishReason: 'stop' },
  ]
  let i = 0
  const model = { name: 'gpt-test', generate: async () => replies[i++] ?? { text: 'extra' } }
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const agent = createAgent({ model, tools: [echo], clock, middleware: [tracing], onEvent: tracing.onAgentEvent })
  tracing.attach(agent.stack)
  const outcome = await agent.run({ input: 'echo a', runId: 'r1' })
  expect(outcome.status).toBe('completed')
  const spans = sdk.spans()
  const run = spans.find((s) => s.name === 'invoke_agent')
  expect(run?.attributes).toMatchObject({
    'shallot.run.id': 'r1',
    'shallot.run.status': 'completed',
    'gen_ai.usage.input_tokens': 220,
    'gen_ai.usage.output_tokens': 14,
  })
  const children = spans.filter((s) => s.parentSpanContext?.spanId === run?.spanContext().spanId).map((s) => s.name)
  expect(children).toEqual(['chat gpt-test', 'execute_tool echo', 'chat gpt-test'])
  const chat = spans.find((s) => s.name === 'chat gpt-test')
  expect(chat?.attributes).toMatchObject({
    'gen_ai.request.model': 'gpt-test',
    'gen_ai.usage.input_tokens': 100,
    'gen_ai.response.finish_reasons': ['tool_calls'],
  })
  const usage = await sdk.points('gen_ai.client.token.usage')
  expect(usage?.dataPoints.map((p) => [p.attributes['gen_ai.token.type'], (p.value as { sum: number }).sum])).toEqual([
    ['input', 220],
    ['output', 14],
  ])
})
