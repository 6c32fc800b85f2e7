import { type Attributes, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import {
  type CallFinishedEvent,
  type CallStartedEvent,
  type Clock,
  LoopError,
  type StackEvent,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { type ClockTime, eventAttributes } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import type { Instruments } from './instruments.js'

/** What every tool span reads, built once by `otel()`. */
export interface ToolSpans {
  readonly tracer: Tracer
  readonly instruments: Instruments
  readonly text: Parameters<typeof eventAttributes>[1]
  /** An attribute's text, secrets redacted and cut to the attribute limit. */
  readonly clean: (s: string) => string
  readonly time: ClockTime
  /** The span of a run seen through `onAgentEvent`, so a tool span is its child. */
  readonly runSpan: (runId: string) => Span | undefined
}

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

/** What a tool span starts from: the call as `call.started` names it. */
export interface ToolSpanStart {
  readonly tool: string
  readonly callId: string
  readonly runId: string
  readonly turn: number
  readonly effect?: string | undefined
  /** When the call started, on `clock`. */
  readonly at: number
}

/**
 * Starts the `execute_tool {tool}` span of one call, a child of its run's span when the run is traced.
 *
 * @example
 * const span = startToolSpan(spans, { tool: 'search', callId: 'c1', runId: 'r1', turn: 1, effect: 'read', at: clock.now() }, clock)
 */
export function startToolSpan(d: ToolSpans, call: ToolSpanStart, clock: Clock): Span {
  const { tool, effect } = call
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.call.id': d.clean(call.callId),
    'gen_ai.tool.type': 'function',
    'shallot.run.id': d.clean(call.runId),
    'shallot.turn': call.turn,
  }
  if (effect !== undefined) attributes['shallot.tool.effect'] = effect
  const run = d.runSpan(call.runId)
  const parent = run === undefined ? context.active() : trace.setSpan(context.active(), run)
  return d.tracer.startSpan(`execute_tool ${tool}`, { kind: SpanKind.INTERNAL, attributes, startTime: d.time.at(clock, call.at) }, parent)
}

/** The span of a call the unattached layer traces, and whether the call has settled (its span ended). */
export interface TracedCall {
  readonly span: Span
  settled(): boolean
}

/**
 * A layer event of a call the unattached layer traces: a span event, or once the span has ended (a
 * late result, say) a zero-length child of it; and counted.
 *
 * @example
 * observeToolEvent(spans, ctx, { span, settled: () => done }, 'retry.scheduled', { attempt: 2 })
 */
export function observeToolEvent(
  d: ToolSpans,
  ctx: ToolContext,
  { span, settled }: TracedCall,
  type: string,
  fields: Record<string, unknown> | undefined,
): void {
  try {
    const attributes = eventAttributes(fields ?? {}, d.text)
    const at = d.time.at(ctx.clock)
    if (settled()) {
      const late = d.tracer.startSpan(
        `${type} ${ctx.call.name}`,
        { kind: SpanKind.INTERNAL, startTime: at, attributes: { ...attributes, 'gen_ai.tool.name': ctx.call.name } },
        trace.setSpan(context.active(), span),
      )
      late.end(at)
    } else span.addEvent(type, attributes, at)
    count(d.instruments, ctx.call.name, type, fields ?? {}, d.clean)
  } catch {
    // Telemetry never changes a call's outcome.
  }
}

/**
 * Ends the span the unattached layer opened, from how the call settled: its outcome, `error.type`,
 * attempts and executions, and the duration and attempts metrics.
 *
 * @example
 * finishToolSpan(spans, ctx, span, started, failure)
 */
export function finishToolSpan(d: ToolSpans, ctx: ToolContext, span: Span, started: number, failure: { error: unknown } | undefined): void {
  const { clean } = d
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
  span.end(d.time.at(ctx.clock, ended))
  recordCall(d, ctx.call.name, errorType, ended - started, ctx.attempt)
}

function recordCall(d: ToolSpans, tool: string, errorType: string | undefined, durationMs: number, attempts: number): void {
  const metric: Attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool }
  if (errorType !== undefined) metric['error.type'] = errorType
  d.instruments.duration.record(Math.max(0, durationMs) / 1000, metric)
  d.instruments.attempts.record(attempts, metric)
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
 * The attached layer's calls: spans live here from call.started to call.finished, keyed by the call's
 * number (ctx.callSeq): run and call ids repeat across stacks (every stack's calls without a run are in
 * run `default`) and a caller may give two calls one id.
 */
export class AttachedCalls {
  readonly open = new Map<number, OpenCall>()
  private readonly ended = new Map<number, Span>()
  /** Attachments not yet detached: while there is one, the layer lets the stack's events own the spans. */
  attached = 0
  private readonly d: ToolSpans

  constructor(d: ToolSpans) {
    this.d = d
  }

  /** One stack event, heard by the attachment `owner` of a stack whose clock is `clock`. */
  onStackEvent(owner: object, clock: Clock, event: StackEvent): void {
    try {
      const key = event.callSeq
      if (event.type === 'call.started') {
        const e = event as CallStartedEvent
        // One stack attached twice: the first attachment traces the call.
        if (this.open.has(key)) return
        const span = startToolSpan(this.d, e, clock)
        this.open.set(key, { span, started: e.at, owner })
        return
      }
      const call = this.open.get(key)
      if (call !== undefined && call.owner !== owner) return
      if (event.type === 'call.finished') {
        if (call !== undefined) this.finish(key, clock, call, event as CallFinishedEvent)
        return
      }
      this.layerEvent(key, clock, call, event)
    } catch {
      // Telemetry never changes a call's outcome.
    }
  }

  /** Detaching `owner`: their call.finished will not be heard, so the spans of its calls still in flight end now. */
  detach(owner: object, clock: Clock): void {
    for (const [key, call] of this.open) {
      if (call.owner !== owner) continue
      this.open.delete(key)
      try {
        call.span.setAttribute('shallot.outcome', 'unknown')
        call.span.end(this.d.time.at(clock))
      } catch {
        // Telemetry never changes a call's outcome.
      }
    }
  }

  /** A layer's event: a span event, or for a call already ended a zero-length child of its span; and counted. */
  private layerEvent(key: number, clock: Clock, call: OpenCall | undefined, event: StackEvent): void {
    const { d } = this
    const { type, at, runId: _r, callId: _c, tool, ...fields } = event
    const attributes = eventAttributes(fields, d.text)
    if (call !== undefined) call.span.addEvent(type, attributes, d.time.at(clock, at))
    else {
      const parent = this.ended.get(key)
      const late = d.tracer.startSpan(
        `${type} ${tool}`,
        { kind: SpanKind.INTERNAL, startTime: d.time.at(clock, at), attributes: { ...attributes, 'gen_ai.tool.name': tool } },
        parent === undefined ? context.active() : trace.setSpan(context.active(), parent),
      )
      late.end(d.time.at(clock, at))
    }
    count(d.instruments, tool, type, fields, d.clean)
  }

  private finish(key: number, clock: Clock, call: OpenCall, e: CallFinishedEvent): void {
    this.open.delete(key)
    this.ended.set(key, call.span)
    if (this.ended.size > MAX_ENDED) this.ended.delete(this.ended.keys().next().value as number)
    const { span } = call
    const { clean } = this.d
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
    span.end(this.d.time.at(clock, e.at))
    recordCall(this.d, e.tool, errorType, e.durationMs, e.attempts)
  }
}
