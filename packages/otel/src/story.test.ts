import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { RunOutcome } from '@shallot/agent'
import type { StackEvent } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { consecutive, createAgent, defaultMiddleware, defaultModelMiddleware } from 'shallot'
import { afterEach, expect, it } from 'vitest'
import { otelSdk, storyModel, storyTools } from '../test/world.js'
import { DURATION_BUCKETS, instrumentAgent, instrumentModel, otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

async function runStory() {
  sdk = otelSdk()
  const clock = manualClock()
  const { tools, sent } = storyTools(clock)
  const { tracer, meter } = sdk
  const agent = instrumentAgent(
    createAgent({
      model: instrumentModel(storyModel(), { model: 'scripted-1', provider: 'shallot.testing', tracer, meter, clock }),
      tools,
      clock,
      random: seededRandom(2026),
      middleware: [
        otel({ tracer, meter, secrets: ['hunter2'] }),
        ...defaultMiddleware({ timeout: { ms: 2_000 }, circuitBreaker: { policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 } }),
      ],
      limits: { maxTurns: 30, maxSteps: 80 },
      modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 10 } }),
    }),
    { name: 'billing', tracer },
  )
  const events: StackEvent[] = []
  agent.stack.on((e) => events.push(e))
  let outcome: RunOutcome | undefined
  const pending = agent.run({ runId: 'demo-1', input: 'refund ORD-2026-00042' }).then((o) => {
    outcome = o
    return o
  })
  while (outcome === undefined) await clock.runAll()
  await pending
  return { outcome: outcome as RunOutcome, events, sent, spans: sdk.spans() }
}

/** A data point's value: a number for counters, the histogram's summary otherwise. */
type Point = number & { count: number; sum: number; buckets: { boundaries: number[] } }
const ms = ([s, ns]: [number, number]) => s * 1000 + ns / 1e6
const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name)
const eventNames = (span: ReadableSpan | undefined) => span?.events.map((e) => e.name) ?? []

it('traces the demo run: one invoke_agent, a chat span per model attempt, an execute_tool span per logical call', async () => {
  const { outcome, spans } = await runStory()
  expect(outcome.status).toBe('stopped')
  const [root, ...others] = byName(spans, 'invoke_agent billing')
  expect(others).toEqual([])
  expect(root?.parentSpanContext).toBeUndefined()
  expect(root?.attributes).toMatchObject({
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'billing',
    'shallot.run.id': 'demo-1',
    'shallot.run.status': 'stopped',
    'shallot.run.turns': 14,
    'error.type': 'loop_detected',
    'gen_ai.usage.output_tokens': 15 * 20,
  })
  expect(root?.status.code).toBe(SpanStatusCode.ERROR)
  const rootId = root?.spanContext().spanId
  const chats = byName(spans, 'chat scripted-1')
  // 15 answers and the one 503 that core retried.
  expect(chats).toHaveLength(16)
  for (const chat of chats) {
    expect(chat.kind).toBe(SpanKind.CLIENT)
    expect(chat.parentSpanContext?.spanId).toBe(rootId)
  }
  expect(chats[0]?.attributes['error.type']).toBe('503')
  expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR)
  expect(chats[1]?.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'shallot.testing',
    'gen_ai.request.model': 'scripted-1',
    'gen_ai.usage.input_tokens': 100,
    'gen_ai.usage.output_tokens': 20,
    'gen_ai.response.finish_reasons': ['tool_calls'],
  })
  const tools = spans.filter((s) => s.name.startsWith('execute_tool '))
  expect(tools.map((s) => s.name.slice('execute_tool '.length))).toEqual([
    'read_file',
    'read_file',
    'search_docs',
    'charge_card',
    'charge_card',
    'status_page',
    'status_page',
    'status_cache',
    'send_receipt',
    'send_receipt',
    'read_file',
    'read_file',
    'read_file',
    'read_file',
    'read_file',
  ])
  for (const span of tools) {
    expect(span.kind).toBe(SpanKind.INTERNAL)
    expect(span.parentSpanContext?.spanId).toBe(rootId)
    expect(span.attributes['gen_ai.operation.name']).toBe('execute_tool')
    expect(span.attributes['gen_ai.tool.type']).toBe('function')
  }
  expect(tools[8]?.attributes).toMatchObject({ 'gen_ai.tool.name': 'send_receipt', 'gen_ai.tool.call.id': 'receipt-1', 'shallot.turn': 9 })
})

it('marks a soft failure ERROR with its code as error.type, and shows every attempt as events', async () => {
  const { spans } = await runStory()
  const tools = spans.filter((s) => s.name.startsWith('execute_tool '))
  const [typo, fixed, search, charge, chargeAgain, status1, status2, , receipt1, receipt2, , , refused, , stopped] = tools
  expect(typo?.attributes).toMatchObject({
    'error.type': 'not_found',
    'shallot.outcome': 'soft_error',
    'shallot.error.category': 'recoverable',
  })
  expect(typo?.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('file src/mian.rs not found') })
  expect(typo?.status.message).not.toContain('hunter2')
  expect(typo?.status.message).not.toContain('alice')
  expect(fixed?.status.code).toBe(SpanStatusCode.UNSET)
  expect(fixed?.attributes['error.type']).toBeUndefined()
  // The flaky read: three attempts, two retries scheduled with their codes and delays, one success.
  expect(search?.attributes).toMatchObject({ 'shallot.outcome': 'ok', 'shallot.tool.attempts': 3, 'shallot.tool.executions': 3 })
  const retries = search?.events.filter((e) => e.name === 'retry.scheduled') ?? []
  expect(retries.map((e) => e.attributes?.attempt)).toEqual([2, 3])
  expect(retries.every((e) => e.attributes?.code === 'upstream_error' && typeof e.attributes?.delayMs === 'number')).toBe(true)
  // The write that timed out: not retried, its late settle recorded, its repeat refused as outcome_unknown.
  // The deadline comes first; the late settle lands whenever the tool answers, beside retry's decision.
  const chargeEvents = eventNames(charge)
  expect(chargeEvents[0]).toBe('timeout.expired')
  expect([...chargeEvents].sort()).toEqual(
    ['timeout.expired', 'timeout.late', 'retry.stopped', 'circuit-breaker.failure', 'idempotency.outcome_unknown'].sort(),
  )
  expect(chargeEvents.indexOf('circuit-breaker.failure')).toBeLessThan(chargeEvents.indexOf('idempotency.outcome_unknown'))
  expect(charge?.events[0]?.attributes).toMatchObject({ attempt: 1, timeoutMs: 2000 })
  expect(charge?.attributes['error.type']).toBe('timeout')
  expect(chargeAgain?.attributes).toMatchObject({ 'error.type': 'outcome_unknown', 'shallot.tool.executions': 0 })
  expect(eventNames(chargeAgain)).toEqual(['idempotency.refused'])
  // The dead dependency: the first call's two timed-out requests open the circuit (each request counts, decision 407);
  // the second call is refused before it runs.
  const opened = status1?.events.find((e) => e.name === 'circuit-breaker.state')
  expect(opened?.attributes).toMatchObject({ from: 'closed', to: 'open' })
  expect(status2?.attributes).toMatchObject({ 'error.type': 'circuit_open', 'shallot.tool.executions': 0 })
  // The receipt sent twice: the second is replayed, the tool ran once.
  expect(receipt1?.attributes['shallot.tool.replayed']).toBe(false)
  expect(receipt2?.attributes).toMatchObject({ 'shallot.tool.replayed': true, 'shallot.tool.executions': 0 })
  expect(eventNames(receipt2)).toEqual(['idempotency.replayed'])
  // The loop: refused softly, then stopped as a hard error.
  expect(refused?.attributes['error.type']).toBe('repeated_failure')
  expect(eventNames(refused)).toEqual(['stuck-loop.refused'])
  expect(stopped?.attributes).toMatchObject({ 'error.type': 'loop_detected', 'shallot.outcome': 'hard_error' })
  expect(eventNames(stopped)).toEqual(['stuck-loop.stopped'])
  // Span times follow the stack's clock: the timed-out write lasted its 2 s deadline.
  expect(ms(charge?.duration ?? [0, 0])).toBeCloseTo(2000, 0)
})

it("makes the tool's own spans children of its execute_tool span", async () => {
  const { spans } = await runStory()
  const search = spans.find((s) => s.name === 'execute_tool search_docs')
  const http = byName(spans, 'GET /search')
  expect(http).toHaveLength(3)
  for (const span of http) {
    expect(span.parentSpanContext?.spanId).toBe(search?.spanContext().spanId)
    expect(span.spanContext().traceId).toBe(search?.spanContext().traceId)
  }
})

it('puts nothing secret in any attribute, event or status', async () => {
  const { spans } = await runStory()
  const everything = JSON.stringify(spans.map((s) => ({ a: s.attributes, e: s.events, st: s.status })))
  for (const secret of ['hunter2', 'sk-live-abcdefghijklmnop1234', '10.0.0.7', '/home/alice']) expect(everything).not.toContain(secret)
  expect(everything).toContain('[redacted]')
})

it("records the GenAI metrics and shallot's own for the same run", async () => {
  await runStory()
  const points = async (name: string) =>
    ((await sdk?.points(name))?.dataPoints ?? []) as unknown as Array<{ attributes: Record<string, unknown>; value: Point }>
  const duration = await sdk?.points('gen_ai.client.operation.duration')
  expect(duration?.descriptor).toMatchObject({ unit: 's', type: 'HISTOGRAM' })
  const durations = await points('gen_ai.client.operation.duration')
  const chatOk = durations.find((p) => p.attributes['gen_ai.operation.name'] === 'chat' && p.attributes['error.type'] === undefined)
  expect(chatOk?.attributes).toEqual({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'shallot.testing',
    'gen_ai.request.model': 'scripted-1',
  })
  expect(chatOk?.value.count).toBe(15)
  expect(durations.find((p) => p.attributes['error.type'] === '503')?.value.count).toBe(1)
  const chargeTimeout = durations.find(
    (p) => p.attributes['gen_ai.tool.name'] === 'charge_card' && p.attributes['error.type'] === 'timeout',
  )
  expect(chargeTimeout?.value).toMatchObject({ count: 1, sum: 2 })
  expect(chargeTimeout?.value.buckets.boundaries).toEqual(DURATION_BUCKETS)

  const tokens = await sdk?.points('gen_ai.client.token.usage')
  expect(tokens?.descriptor.unit).toBe('{token}')
  const byType = Object.fromEntries((tokens?.dataPoints ?? []).map((p) => [p.attributes['gen_ai.token.type'], p.value]))
  expect(byType.output).toMatchObject({ count: 15, sum: 300 })
  expect(byType.input).toMatchObject({ count: 15 })

  const attempts = await points('shallot.tool.attempts')
  expect(attempts.find((p) => p.attributes['gen_ai.tool.name'] === 'search_docs')?.value).toMatchObject({ count: 1, sum: 3 })
  const retries = await points('shallot.retry.scheduled')
  expect(retries.map((p) => [p.attributes['gen_ai.tool.name'], p.attributes['error.type'], p.value])).toEqual([
    ['search_docs', 'upstream_error', 2],
    ['status_page', 'timeout', 1],
  ])
  const circuit = await points('shallot.circuit.state_changes')
  expect(circuit.map((p) => [p.attributes['shallot.circuit.from'], p.attributes['shallot.circuit.to'], p.value])).toEqual([
    ['closed', 'open', 1],
  ])
  const refusals = await points('shallot.refusals')
  expect(
    refusals.map((p) => [
      p.attributes['shallot.layer'],
      p.attributes['shallot.refusal.reason'],
      p.attributes['shallot.refusal.action'],
      p.value,
    ]),
  ).toEqual([
    ['idempotency', 'outcome_unknown', 'refused', 1],
    ['circuit-breaker', 'open', 'refused', 1],
    ['stuck-loop', 'repeated_failure', 'refused', 2],
    ['stuck-loop', 'repeated_failure', 'stopped_run', 1],
  ])
  expect((await points('shallot.idempotency.replays')).map((p) => p.value)).toEqual([1])
  expect((await points('shallot.idempotency.outcome_unknown')).map((p) => [p.attributes['gen_ai.tool.name'], p.value])).toEqual([
    ['charge_card', 1],
  ])
})

it('traces the demo run from core’s events alone: the same tree, the provider named, the 503 classified, the HTTP span under its tool', async () => {
  sdk = otelSdk()
  const clock = manualClock()
  const { tools } = storyTools(clock)
  const { tracer, meter } = sdk
  const tracing = otel({ tracer, meter, secrets: ['hunter2'] })
  const agent = createAgent({
    model: { ...storyModel(), name: 'scripted-1', provider: 'openai.chat' },
    tools,
    clock,
    random: seededRandom(2026),
    // otel() innermost: attached, it still covers every layer's events.
    middleware: [
      ...defaultMiddleware({ timeout: { ms: 2_000 }, circuitBreaker: { policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 } }),
      tracing,
    ],
    limits: { maxTurns: 30, maxSteps: 80 },
    modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 10 } }),
    onEvent: tracing.onAgentEvent,
  })
  tracing.attach(agent.stack)
  let outcome: RunOutcome | undefined
  const pending = agent.run({ runId: 'demo-1', input: 'refund ORD-2026-00042' }).then((o) => {
    outcome = o
    return o
  })
  while (outcome === undefined) await clock.runAll()
  await pending
  const spans = sdk.spans()
  const [root, ...others] = byName(spans, 'invoke_agent')
  expect(others).toEqual([])
  expect(root?.attributes).toMatchObject({
    'gen_ai.provider.name': 'openai',
    'shallot.run.status': 'stopped',
    'error.type': 'loop_detected',
    'gen_ai.usage.output_tokens': 15 * 20,
  })
  const rootId = root?.spanContext().spanId
  const chats = byName(spans, 'chat scripted-1')
  expect(chats).toHaveLength(16)
  expect(chats.every((c) => c.parentSpanContext?.spanId === rootId && c.attributes['gen_ai.provider.name'] === 'openai')).toBe(true)
  expect(chats.map((c) => c.attributes['error.type'] ?? 'ok').slice(0, 2)).toEqual(['503', 'ok'])
  const toolSpans = spans.filter((s) => s.name.startsWith('execute_tool '))
  expect(toolSpans).toHaveLength(15)
  expect(toolSpans.every((s) => s.parentSpanContext?.spanId === rootId)).toBe(true)
  const search = toolSpans.find((s) => s.name === 'execute_tool search_docs')
  const http = byName(spans, 'GET /search')
  expect(http).toHaveLength(3)
  expect(http.every((s) => s.parentSpanContext?.spanId === search?.spanContext().spanId)).toBe(true)
  expect(eventNames(search).filter((n) => n === 'retry.scheduled')).toHaveLength(2)
  const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.status, s.events]))
  expect(everything).not.toMatch(/hunter2|alice|sk-live-abcdefghijklmnop1234|10\.0\.0\.7/)
})
