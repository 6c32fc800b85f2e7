import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { type Clock, defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { type ScriptStep, scriptedModel } from '@shallot/testing'
import { z } from 'zod'

/** A reader the test collects from by hand: no timer, no exporter. */
export class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** The real SDK, wired the way an application does it: global tracer provider and context manager. */
export function otelSdk() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const contextManager = new AsyncLocalStorageContextManager().enable()
  context.setGlobalContextManager(contextManager)
  trace.setGlobalTracerProvider(provider)
  const reader = new TestReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  return {
    exporter,
    tracer: provider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    async points(name: string) {
      const { resourceMetrics } = await reader.collect()
      const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      return metric
    },
    async close() {
      trace.disable()
      context.disable()
      await provider.shutdown()
      await meterProvider.shutdown()
    },
  }
}

const failed = (results: ReadonlyArray<{ ok: boolean }>) => results.some((r) => !r.ok)

/**
 * The demo's story (packages/cli/src/demo/story.ts), plus a receipt sent twice (an idempotent
 * replay): a typo, a flaky read, a write that times out and is refused when repeated, a dead
 * dependency whose circuit opens, and a model that loops until stuck-loop stops the run.
 */
export const story: ScriptStep[] = [
  { text: 'Let me look at the entry point.', toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
  ({ lastResults }) =>
    failed(lastResults)
      ? { text: 'Typo.', toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
      : { text: 'odd, that worked' },
  { text: 'How should refunds be issued?', toolCalls: [{ name: 'search_docs', args: { query: 'refund policy' } }] },
  { text: 'Refund the order.', toolCalls: [{ name: 'charge_card', args: { order: 'ORD-2026-00042', amountCents: -4200 } }] },
  { text: 'It timed out; try once more.', toolCalls: [{ name: 'charge_card', args: { amountCents: -4200, order: 'ORD-2026-00042' } }] },
  { text: 'Is the provider healthy?', toolCalls: [{ name: 'status_page', args: { service: 'payments' } }] },
  { text: 'Try the provider-wide page.', toolCalls: [{ name: 'status_page', args: { service: 'payments-eu' } }] },
  ({ tools }) =>
    tools.find((t) => t.name === 'status_page')?.note
      ? { text: 'Unavailable; use the cache.', toolCalls: [{ name: 'status_cache', args: { service: 'payments' } }] }
      : { text: 'One more try.', toolCalls: [{ name: 'status_page', args: { service: 'payments' } }] },
  { text: 'Send the receipt.', toolCalls: [{ id: 'receipt-1', name: 'send_receipt', args: { order: 'ORD-2026-00042' } }] },
  { text: 'Send it again to be sure.', toolCalls: [{ id: 'receipt-2', name: 'send_receipt', args: { order: 'ORD-2026-00042' } }] },
  { text: 'I need the build log.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'The refund is done.' },
]

/** The scripted model with usage and finish reasons, whose first call fails once with a 503. */
export function storyModel(): ModelAdapter {
  const inner = scriptedModel(story)
  let calls = 0
  return {
    async generate(request) {
      calls++
      if (calls === 1)
        throw Object.assign(new Error('upstream 503 from http://10.0.0.7/v1 key sk-live-abcdefghijklmnop1234'), { status: 503 })
      const response = await inner.generate(request)
      const done = (response.toolCalls ?? []).length === 0
      return {
        ...response,
        usage: { inputTokens: 100 * request.messages.length, outputTokens: 20 },
        finishReason: done ? 'stop' : 'tool_calls',
      }
    },
  }
}

/** The demo's tools (packages/cli/src/demo/tools.ts), plus a receipt sender; search_docs starts its own HTTP span. */
export function storyTools(clock: Clock) {
  const files = new Map([['src/main.rs', 'fn main() {}']])
  let searches = 0
  const sent: string[] = []
  const http = trace.getTracer('http-client')
  return {
    sent,
    tools: [
      defineTool({
        name: 'read_file',
        description: 'Read a file',
        input: z.object({ path: z.string().min(1) }),
        effect: 'read',
        execute: ({ path }) => {
          const text = files.get(path)
          if (text === undefined)
            throw new ToolError('not_found', `file ${path} not found (password=hunter2 at /home/alice/proj)`, {
              hint: 'files: src/main.rs',
            })
          return text
        },
      }),
      defineTool({
        name: 'search_docs',
        description: 'Search the docs',
        input: z.object({ query: z.string() }),
        effect: 'read',
        execute: async ({ query }, { signal }) => {
          const span = http.startSpan('GET /search')
          try {
            await clock.sleep(40, signal)
            searches++
            if (searches <= 2) throw Object.assign(new Error('Service Unavailable'), { status: 503 })
            return `1 result for "${query}"`
          } finally {
            span.end()
          }
        },
      }),
      defineTool({
        name: 'charge_card',
        description: 'Charge a card',
        input: z.object({ order: z.string(), amountCents: z.number().int() }),
        effect: 'write',
        execute: async (_args, { signal }) => {
          await clock.sleep(60_000, signal)
          return { ok: true }
        },
      }),
      defineTool({
        name: 'status_page',
        description: 'Live status',
        input: z.object({ service: z.string() }),
        effect: 'read',
        execute: async (_args, { signal }) => {
          await clock.sleep(60_000, signal)
          return 'unreachable'
        },
      }),
      defineTool({
        name: 'status_cache',
        description: 'Cached status',
        input: z.object({ service: z.string() }),
        effect: 'read',
        execute: ({ service }) => `${service}: degraded`,
      }),
      defineTool({
        name: 'send_receipt',
        description: 'E-mail the receipt',
        input: z.object({ order: z.string() }),
        effect: 'write',
        execute: ({ order }) => {
          sent.push(order)
          return { sent: order }
        },
      }),
    ],
  }
}
