import { type Attributes, context, type Meter, metrics, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import { LoopError, type Middleware, parseOptions, type ToolContext, ToolError } from '@shallot/core'
import { z } from 'zod'
import { ClockTime, eventAttributes, MAX_ATTRIBUTE_CHARS, sanitizerOf } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import { type Instruments, instrumentsOf } from './instruments.js'
import { SCOPE } from './scope.js'

export interface OtelOptions {
  /** Default: the global tracer provider's `@shallot/otel` tracer (a no-op until you register a provider). */
  tracer?: Tracer
  /** Default: the global meter provider's `@shallot/otel` meter. */
  meter?: Meter
  /** Your secrets, redacted from every attribute (built-in patterns are always redacted). */
  secrets?: readonly (string | RegExp)[]
}

const optionsSchema = z
  .object({
    tracer: z
      .custom<Tracer>((v) => typeof (v as Tracer | undefined)?.startSpan === 'function', 'must be an OpenTelemetry Tracer')
      .optional(),
    meter: z
      .custom<Meter>((v) => typeof (v as Meter | undefined)?.createHistogram === 'function', 'must be an OpenTelemetry Meter')
      .optional(),
    secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
  })
  .strict()

const REFUSALS = new Set(['circuit-breaker.refused', 'stuck-loop.refused', 'stuck-loop.stopped', 'idempotency.refused', 'bulkhead.refused'])

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** Counts what a layer event means for the dashboards: retries, circuit changes, refusals, replays, unknown outcomes. */
function count(m: Instruments, tool: string, type: string, fields: Readonly<Record<string, unknown>>, clean: (s: string) => string): void {
  const base = { 'gen_ai.tool.name': tool }
  if (type === 'retry.scheduled') m.retries.add(1, { ...base, 'error.type': clean(str(fields.code) ?? '_OTHER') })
  else if (type === 'circuit-breaker.state')
    m.circuitChanges.add(1, {
      ...base,
      'shallot.circuit.key': clean(str(fields.key) ?? tool),
      'shallot.circuit.from': str(fields.from) ?? 'unknown',
      'shallot.circuit.to': str(fields.to) ?? 'unknown',
    })
  else if (type === 'idempotency.replayed') m.replays.add(1, { ...base, 'shallot.replay.from': str(fields.from) ?? 'unknown' })
  else if (type === 'idempotency.outcome_unknown') m.unknownOutcomes.add(1, base)
  else if (REFUSALS.has(type)) {
    const reason = str(fields.reason) ?? str(fields.code) ?? str(fields.circuit) ?? 'refused'
    m.refusals.add(1, {
      ...base,
      'shallot.layer': type.slice(0, type.indexOf('.')),
      'shallot.refusal.reason': clean(reason),
      'shallot.refusal.action': type.endsWith('.stopped') ? 'stopped_run' : 'refused',
    })
  }
}

/**
 * The outermost layer that makes each logical tool call an `execute_tool {tool}` span (OpenTelemetry
 * GenAI conventions), with every layer event as a span event, the soft error's code as `error.type`,
 * and the active context handed to the inner layers, so spans the tool starts are its children.
 * Attempts are span events (`retry.scheduled`, `timeout.expired`, ...) and `shallot.tool.attempts`.
 *
 * @example
 * const stack = createStack({ tools, middleware: [otel(), ...defaultMiddleware()] })
 */
export function otel(options: OtelOptions = {}): Middleware {
  const parsed = parseOptions('otel()', optionsSchema, options)
  const tracer = parsed.tracer ?? trace.getTracer(SCOPE.name, SCOPE.version)
  const instruments = instrumentsOf(parsed.meter ?? metrics.getMeter(SCOPE.name, SCOPE.version))
  const text = sanitizerOf(parsed.secrets)
  const clean = (s: string) => text.text(s, MAX_ATTRIBUTE_CHARS)
  const time = new ClockTime()

  function observe(ctx: ToolContext, span: Span, settled: () => boolean, type: string, fields: Record<string, unknown> | undefined) {
    try {
      const attributes = eventAttributes(fields ?? {}, text)
      const at = time.at(ctx.clock)
      if (settled()) {
        // The span has ended (a late result, say): the event becomes a zero-length child of it.
        const late = tracer.startSpan(
          `${type} ${ctx.call.name}`,
          { kind: SpanKind.INTERNAL, startTime: at, attributes: { ...attributes, 'gen_ai.tool.name': ctx.call.name } },
          trace.setSpan(context.active(), span),
        )
        late.end(at)
      } else span.addEvent(type, attributes, at)
      count(instruments, ctx.call.name, type, fields ?? {}, clean)
    } catch {
      // Telemetry never changes a call's outcome.
    }
  }

  async function otelLayer(ctx: ToolContext, next: () => Promise<void>): Promise<void> {
    const started = ctx.clock.now()
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': ctx.call.name,
      'gen_ai.tool.call.id': clean(ctx.call.id),
      'gen_ai.tool.type': 'function',
      'shallot.run.id': clean(ctx.run.id),
      'shallot.turn': ctx.run.turn,
    }
    if (ctx.tool !== undefined) attributes['shallot.tool.effect'] = ctx.tool.effect
    let span: Span
    try {
      span = tracer.startSpan(`execute_tool ${ctx.call.name}`, {
        kind: SpanKind.INTERNAL,
        attributes,
        startTime: time.at(ctx.clock, started),
      })
    } catch {
      // A tracer that cannot start a span costs the trace, never the call.
      return next()
    }
    let done = false
    const emit = ctx.emit
    ctx.emit = function emitAndTrace(type: string, fields?: Record<string, unknown>): void {
      emit.call(ctx, type, fields)
      observe(ctx, span, () => done, type, fields)
    }
    let failure: { error: unknown } | undefined
    try {
      await context.with(trace.setSpan(context.active(), span), next)
    } catch (error) {
      failure = { error }
    }
    done = true
    try {
      finish(ctx, span, started, failure)
    } catch {
      // Telemetry never changes a call's outcome.
    }
    if (failure !== undefined) throw failure.error
  }

  function finish(ctx: ToolContext, span: Span, started: number, failure: { error: unknown } | undefined): void {
    let errorType: string | undefined
    const err = failure?.error
    if (failure === undefined) {
      span.setAttributes({ 'shallot.outcome': 'ok', 'shallot.tool.replayed': ctx.result?.replayed === true })
    } else if (ToolError.is(err)) {
      errorType = err.code
      span.setAttributes({ 'error.type': err.code, 'shallot.outcome': 'soft_error', 'shallot.error.category': err.category })
      span.setStatus({ code: SpanStatusCode.ERROR, message: clean(err.message) })
    } else {
      errorType = errorTypeOf(err)
      span.setAttributes({ 'error.type': errorType, 'shallot.outcome': 'hard_error' })
      span.setStatus({ code: SpanStatusCode.ERROR, message: LoopError.is(err) ? clean(err.message) : 'the call ended the run' })
    }
    const ended = ctx.clock.now()
    span.setAttributes({ 'shallot.tool.attempts': ctx.attempt, 'shallot.tool.executions': ctx.executions })
    span.end(time.at(ctx.clock, ended))
    const metric: Attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': ctx.call.name }
    if (errorType !== undefined) metric['error.type'] = errorType
    instruments.duration.record(Math.max(0, ended - started) / 1000, metric)
    instruments.attempts.record(ctx.attempt, metric)
  }
  return otelLayer
}
