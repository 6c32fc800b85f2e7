import { type Attributes, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import { LoopError, type ModelContext, type ModelMiddleware, ToolError } from '@shallot/core'
import { type ClockTime, MAX_ATTRIBUTE_CHARS } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import type { Instruments } from './instruments.js'
import { providerName } from './provider-name.js'
import { factsOf } from './usage.js'

type Sanitizer = { text(text: string, maxLength?: number): string }

/** What the model layer shares with its `otel()`: the run spans to hang under, and the runs it traces itself. */
export interface ModelSpanDeps {
  readonly tracer: Tracer
  readonly instruments: Instruments
  readonly text: Sanitizer
  readonly time: ClockTime
  /** The run's `invoke_agent` span, when the same `otel()` hears the agent's events. */
  runSpan(runId: string): Span | undefined
  /** Tells the agent listener this run's chat spans are the layer's, so it opens none of its own. */
  traced(runId: string): void
}

function answered(span: Span, ctx: ModelContext, base: Attributes, deps: ModelSpanDeps): void {
  const response = ctx.response
  if (response === undefined) return
  const facts = factsOf(response)
  const { instruments, text } = deps
  if (facts.inputTokens !== undefined) {
    span.setAttribute('gen_ai.usage.input_tokens', facts.inputTokens)
    instruments.tokens.record(facts.inputTokens, { ...base, 'gen_ai.token.type': 'input' })
  }
  if (facts.outputTokens !== undefined) {
    span.setAttribute('gen_ai.usage.output_tokens', facts.outputTokens)
    instruments.tokens.record(facts.outputTokens, { ...base, 'gen_ai.token.type': 'output' })
  }
  if (facts.finishReason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [text.text(facts.finishReason, 64)])
  span.setAttribute('shallot.model.tool_calls', facts.toolCalls)
}

/** `error.type` (the code core and the classifier give it) and status ERROR; the message is sanitized, never the raw payload. */
function failed(span: Span, err: unknown, metric: Attributes, deps: ModelSpanDeps): void {
  const type = deps.text.text(errorTypeOf(err), 64)
  metric['error.type'] = type
  span.setAttribute('error.type', type)
  const message = ToolError.is(err) || LoopError.is(err) ? err.message : err instanceof Error ? err.message : String(err)
  span.setStatus({ code: SpanStatusCode.ERROR, message: deps.text.text(message, MAX_ATTRIBUTE_CHARS) })
}

/**
 * The model-call layer of `otel()`: a `chat {model}` CLIENT span (OpenTelemetry GenAI conventions)
 * around every `next()` it makes, child of the run's `invoke_agent` span when its `otel()` hears
 * the agent's events, else of the active span. Inside a retry layer that is one span per attempt;
 * outside it, one span per logical call covering its retries, with the last attempt's number.
 * The span is the active context of the layers inside it and the adapter, so a model SDK's own
 * spans are its children. Telemetry never changes a call's outcome.
 */
export function modelSpans(deps: ModelSpanDeps): ModelMiddleware {
  const { tracer, instruments, time, text } = deps
  const clean = (s: string) => text.text(s, MAX_ATTRIBUTE_CHARS)
  return async function otelModel(ctx, next) {
    const started = ctx.clock.now()
    let span: Span
    const base: Attributes = { 'gen_ai.operation.name': 'chat' }
    try {
      base['gen_ai.request.model'] = clean(ctx.model.name)
      const provider = providerName(ctx.model.provider, clean)
      if (provider !== undefined) base['gen_ai.provider.name'] = provider
      const run = deps.runSpan(ctx.run.id)
      const parent = run === undefined ? context.active() : trace.setSpan(context.active(), run)
      deps.traced(ctx.run.id)
      span = tracer.startSpan(
        `chat ${base['gen_ai.request.model']}`,
        {
          kind: SpanKind.CLIENT,
          startTime: time.at(ctx.clock, started),
          attributes: { ...base, 'shallot.run.id': clean(ctx.run.id), 'shallot.turn': ctx.turn },
        },
        parent,
      )
    } catch {
      // A tracer that cannot start a span costs the trace, never the call.
      return next()
    }
    const metric: Attributes = { ...base }
    let failure: { error: unknown } | undefined
    try {
      await context.with(trace.setSpan(context.active(), span), next)
    } catch (error) {
      failure = { error }
    }
    try {
      if (failure === undefined) answered(span, ctx, base, deps)
      else failed(span, failure.error, metric, deps)
      span.setAttribute('shallot.model.attempt', ctx.attempt)
      const ended = ctx.clock.now()
      span.end(time.at(ctx.clock, ended))
      instruments.duration.record(Math.max(0, ended - started) / 1000, metric)
    } catch {
      // Telemetry never changes a call's outcome.
    }
    if (failure !== undefined) throw failure.error
  }
}
