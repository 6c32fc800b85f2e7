import { type Attributes, context, type Meter, metrics, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import {
  type AgentEventListener,
  type CallFinishedEvent,
  type CallStartedEvent,
  type Clock,
  LoopError,
  type Middleware,
  type ModelMiddleware,
  parseOptions,
  type Stack,
  type StackEvent,
  systemClock,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { z } from 'zod'
import { agentSpans } from './agent-spans.js'
import { ClockTime, eventAttributes, MAX_ATTRIBUTE_CHARS, sanitizerOf } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import { type Instruments, instrumentsOf } from './instruments.js'
import { modelSpans } from './model-spans.js'
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

/** The layer, and what lets it trace from the stack's events wherever it sits in the onion. */
export interface OtelLayer extends Middleware {
  /**
   * Traces every call of `stack` from its `call.started` / `call.finished` events: the span opens
   * before the outermost layer runs and ends once the call settled, so `otel()` may sit anywhere in
   * the onion (it still makes the span the active context for the layers inside it and the tool).
   * One layer may be attached to several stacks. Returns the unsubscribe function, which ends the spans
   * of the stack's calls still in flight (`shallot.outcome: unknown`).
   */
  attach(stack: Stack): () => void
  /**
   * An agent's `onEvent` sink: an `invoke_agent` span per run (token totals from `run.finished`)
   * and a `chat {model}` span per model attempt (`model.call`), with the attached stack's tool spans
   * as children of their run's span. Its `within` makes the run's span the active context of the
   * run and the chat span that of its attempt, so a model SDK's own spans are children of
   * `chat {model}`. No model or agent wrapper needed; pass it as it is (a wrapper function drops
   * `within`: copy it over, `Object.assign(mine, { within: tracing.onAgentEvent.within })`).
   */
  readonly onAgentEvent: AgentEventListener & { readonly within: NonNullable<AgentEventListener['within']> }
  /**
   * The model-call layer (`createAgent({ modelMiddleware: [tracing.model] })`): a `chat {model}` span
   * around each `next()`, child of the run's span. With it, `onAgentEvent` opens no chat spans of its
   * own for that run, so an attempt is traced once.
   */
  readonly model: ModelMiddleware
}

interface OpenCall {
  readonly span: Span
  readonly started: number
  /** The attachment that heard the call start: only its events end the span, and detaching it ends the span. */
  readonly owner: object
}

/** Ended spans kept for late events (a late result): enough for every call in flight, bounded. */
const MAX_ENDED = 1024

/**
 * The layer that makes each logical tool call an `execute_tool {tool}` span (OpenTelemetry
 * GenAI conventions), with every layer event as a span event, the soft error's code as `error.type`,
 * and the active context handed to the inner layers, so spans the tool starts are its children.
 * Attempts are span events (`retry.scheduled`, `timeout.expired`, ...) and `shallot.tool.attempts`.
 * Attached to its stack it traces from the stack's events and may sit anywhere in the onion;
 * unattached it must be outermost, since layers outside it are not seen.
 *
 * @example
 * const tracing = otel()
 * const stack = createStack({ tools, middleware: [...defaultMiddleware(), tracing] })
 * tracing.attach(stack)
 */
export function otel(options: OtelOptions = {}): OtelLayer {
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

  function startSpan(tool: string, callId: string, runId: string, turn: number, effect: string | undefined, clock: Clock, at: number) {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': tool,
      'gen_ai.tool.call.id': clean(callId),
      'gen_ai.tool.type': 'function',
      'shallot.run.id': clean(runId),
      'shallot.turn': turn,
    }
    if (effect !== undefined) attributes['shallot.tool.effect'] = effect
    const run = agent.runSpan(runId)
    const parent = run === undefined ? context.active() : trace.setSpan(context.active(), run)
    return tracer.startSpan(`execute_tool ${tool}`, { kind: SpanKind.INTERNAL, attributes, startTime: time.at(clock, at) }, parent)
  }

  // Runs seen through onAgentEvent, so tool and chat spans are children of their run's span.
  let agentClock: Clock = systemClock
  const agent = agentSpans(tracer, instruments, text, time, () => agentClock)

  // Attached: spans live here from call.started to call.finished, keyed by the call's number (ctx.callSeq):
  // run and call ids repeat across stacks (every stack's calls without a run are in run `default`) and
  // a caller may give two calls one id.
  const open = new Map<number, OpenCall>()
  const ended = new Map<number, Span>()
  let attached = 0

  function onStackEvent(owner: object, clock: Clock, event: StackEvent): void {
    try {
      const key = event.callSeq
      if (event.type === 'call.started') {
        const e = event as CallStartedEvent
        // One stack attached twice: the first attachment traces the call.
        if (open.has(key)) return
        open.set(key, { span: startSpan(e.tool, e.callId, e.runId, e.turn, e.effect, clock, e.at), started: e.at, owner })
        return
      }
      const call = open.get(key)
      if (call !== undefined && call.owner !== owner) return
      if (event.type === 'call.finished') {
        if (call === undefined) return
        open.delete(key)
        ended.set(key, call.span)
        if (ended.size > MAX_ENDED) ended.delete(ended.keys().next().value as number)
        finishFromEvent(clock, call, event as CallFinishedEvent)
        return
      }
      const { type, at, runId: _r, callId: _c, tool, ...fields } = event
      const attributes = eventAttributes(fields, text)
      if (call !== undefined) call.span.addEvent(type, attributes, time.at(clock, at))
      else {
        const parent = ended.get(key)
        const late = tracer.startSpan(
          `${type} ${tool}`,
          { kind: SpanKind.INTERNAL, startTime: time.at(clock, at), attributes: { ...attributes, 'gen_ai.tool.name': tool } },
          parent === undefined ? context.active() : trace.setSpan(context.active(), parent),
        )
        late.end(time.at(clock, at))
      }
      count(instruments, tool, type, fields, clean)
    } catch {
      // Telemetry never changes a call's outcome.
    }
  }

  function endDetached(clock: Clock, span: Span): void {
    try {
      span.setAttribute('shallot.outcome', 'unknown')
      span.end(time.at(clock))
    } catch {
      // Telemetry never changes a call's outcome.
    }
  }

  function finishFromEvent(clock: Clock, call: OpenCall, e: CallFinishedEvent): void {
    const { span } = call
    let errorType: string | undefined
    if (e.outcome === 'ok') span.setAttributes({ 'shallot.outcome': 'ok', 'shallot.tool.replayed': e.replayed })
    else if (e.outcome === 'soft_error') {
      errorType = e.code ?? '_OTHER'
      span.setAttributes({ 'error.type': errorType, 'shallot.outcome': 'soft_error', 'shallot.error.category': e.category ?? 'unknown' })
      span.setStatus({ code: SpanStatusCode.ERROR, message: clean(e.message ?? '') })
    } else {
      errorType = e.kind ?? '_OTHER'
      span.setAttributes({ 'error.type': errorType, 'shallot.outcome': 'hard_error' })
      if (e.code !== undefined) span.setAttribute('shallot.error.code', e.code)
      span.setStatus({ code: SpanStatusCode.ERROR, message: clean(e.message ?? 'the call ended the run') })
    }
    span.setAttributes({ 'shallot.tool.attempts': e.attempts, 'shallot.tool.executions': e.executions })
    span.end(time.at(clock, e.at))
    const metric: Attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': e.tool }
    if (errorType !== undefined) metric['error.type'] = errorType
    instruments.duration.record(Math.max(0, e.durationMs) / 1000, metric)
    instruments.attempts.record(e.attempts, metric)
  }

  async function otelLayer(ctx: ToolContext, next: () => Promise<void>): Promise<void> {
    if (attached > 0) {
      const call = open.get(ctx.callSeq)
      // The stack's events own the span; the layer only makes it the context of what runs inside.
      if (call !== undefined) return context.with(trace.setSpan(context.active(), call.span), next)
    }
    const started = ctx.clock.now()
    let span: Span
    try {
      span = startSpan(ctx.call.name, ctx.call.id, ctx.run.id, ctx.run.turn, ctx.tool?.effect, ctx.clock, started)
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
  const layer = otelLayer as OtelLayer
  layer.attach = (stack) => {
    const clock = stack.clock
    agentClock = clock
    attached++
    const owner = {}
    const off = stack.on((event) => onStackEvent(owner, clock, event))
    let on = true
    return () => {
      if (!on) return
      on = false
      attached--
      off()
      // Their call.finished will not be heard: end the spans of calls still in flight, so none is kept.
      for (const [key, call] of open) {
        if (call.owner !== owner) continue
        open.delete(key)
        endDetached(clock, call.span)
      }
    }
  }
  Object.defineProperty(layer, 'onAgentEvent', { value: agent.listener, enumerable: true })
  const model = modelSpans({ tracer, instruments, text, time, runSpan: agent.runSpan, traced: agent.traced })
  Object.defineProperty(layer, 'model', { value: model, enumerable: true })
  return layer
}
