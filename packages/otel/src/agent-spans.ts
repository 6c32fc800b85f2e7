import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { AgentEvent, AgentEventListener, AgentScope } from '@shallot/agent'
import type { Clock } from '@shallot/core'
import { type ClockTime, eventAttributes, MAX_ATTRIBUTE_CHARS } from './attributes.js'
import type { Instruments } from './instruments.js'
import { providerName } from './provider-name.js'

type Sanitizer = Parameters<typeof eventAttributes>[1]
type ModelCall = Extract<AgentEvent, { type: 'model.call' }>

const tokens = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined

interface Chat {
  readonly span: Span
  readonly key: string
}

const chatKey = (e: { turn: number; model: string; attempt: number }) => `${e.turn}\u0000${e.model}\u0000${e.attempt}`

/**
 * The agent's events as spans: `invoke_agent` per run and `chat {model}` per model attempt. Its
 * `within` makes the run's span the active context of the whole run and the chat span that of its
 * attempt, so a model SDK's own spans (its HTTP client's) are children of `chat {model}`, and what
 * runs outside a tool span is a child of `invoke_agent`.
 */
export function agentSpans(tracer: Tracer, instruments: Instruments, text: Sanitizer, time: ClockTime, clockOf: () => Clock) {
  const spans = new AgentSpans(tracer, instruments, text, time, clockOf)
  const listener = Object.assign(
    function onAgentEvent(event: AgentEvent) {
      spans.onAgentEvent(event)
    },
    {
      within: <T>(scope: AgentScope, fn: () => T): T => spans.within(scope, fn),
    },
  ) satisfies AgentEventListener
  return {
    listener,
    runSpan: (runId: string) => spans.runs.get(runId),
    /** Only runs this listener heard start: their `run.finished` forgets them, so the set stays bounded. */
    traced: (runId: string) => {
      if (spans.runs.has(runId)) spans.layered.add(runId)
    },
  }
}

/** The open spans of the runs and model attempts one `otel()` hears of, and what each agent event does to them. */
class AgentSpans {
  readonly runs = new Map<string, Span>()
  /** The attempt in flight of each run: opened by `within`, ended by its `model.call` event. */
  private readonly chats = new Map<string, Chat>()
  /** Runs whose chat spans `otel()`'s model side (`wrapModelCall`) makes: the listener opens none of its own. */
  readonly layered = new Set<string>()
  private readonly tracer: Tracer
  private readonly instruments: Instruments
  private readonly text: Sanitizer
  private readonly time: ClockTime
  private readonly clockOf: () => Clock

  constructor(tracer: Tracer, instruments: Instruments, text: Sanitizer, time: ClockTime, clockOf: () => Clock) {
    this.tracer = tracer
    this.instruments = instruments
    this.text = text
    this.time = time
    this.clockOf = clockOf
  }

  onAgentEvent(event: AgentEvent): void {
    try {
      if (event.type === 'run.started') {
        const run = this.runs.get(event.runId) ?? this.openRun(event.runId, event.at)
        run.setAttribute('shallot.run.resumed', event.resumed)
      } else if (event.type === 'model.call') this.onModelCall(event)
      else if (event.type === 'run.finished') this.finishRun(event)
      else {
        const run = this.runs.get(event.runId)
        if (run === undefined) return
        const { type, at, runId: _r, ...fields } = event
        run.addEvent(type, eventAttributes(fields, this.text), this.time.at(this.clockOf(), at))
      }
    } catch {
      // Telemetry never changes a run's outcome.
    }
  }

  within<T>(scope: AgentScope, fn: () => T): T {
    let active: Context
    let run: Span | undefined
    try {
      if (scope.type === 'run') {
        run = this.runs.get(scope.runId) ?? this.openRun(scope.runId, scope.at)
        active = trace.setSpan(context.active(), run)
      } else if (this.layered.has(scope.runId)) {
        // The model layer's chat span is already the active context.
        return fn()
      } else {
        this.endLeftover(scope.runId, scope.at)
        const chat = this.openChat(scope.runId, scope)
        this.chats.set(scope.runId, chat)
        active = trace.setSpan(context.active(), chat.span)
      }
    } catch {
      // A tracer that cannot start a span costs the context, never the run.
      return fn()
    }
    const result = context.with(active, fn)
    if (run !== undefined) this.watchRun(scope.runId, run, result)
    return result
  }

  /** An attribute's text, secrets redacted and cut to the limit: one function for the life of the listener. */
  private readonly clean = (s: string): string => this.text.text(s, MAX_ATTRIBUTE_CHARS)

  private parentOf(runId: string): Context {
    const run = this.runs.get(runId)
    return run === undefined ? context.active() : trace.setSpan(context.active(), run)
  }

  private openRun(runId: string, at: number): Span {
    const span = this.tracer.startSpan(
      'invoke_agent',
      {
        kind: SpanKind.INTERNAL,
        startTime: this.time.at(this.clockOf(), at),
        attributes: { 'gen_ai.operation.name': 'invoke_agent', 'shallot.run.id': this.clean(runId) },
      },
      context.active(),
    )
    this.runs.set(runId, span)
    return span
  }

  private finishRun(event: Extract<AgentEvent, { type: 'run.finished' }>): void {
    const span = this.runs.get(event.runId)
    if (span === undefined) return
    this.forget(event.runId, event.at)
    span.setAttributes({
      'shallot.run.status': event.status,
      'shallot.run.turns': event.turns,
      'shallot.run.steps': event.steps,
      'gen_ai.usage.input_tokens': event.usage.inputTokens,
      'gen_ai.usage.output_tokens': event.usage.outputTokens,
    })
    if (event.status === 'stopped') {
      span.setAttribute('error.type', event.kind ?? '_OTHER')
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end(this.time.at(this.clockOf(), event.at))
  }

  /** A run that ended without `run.finished` (its driver threw) still ends its span. */
  private watchRun(runId: string, span: Span, result: unknown): void {
    if (typeof (result as PromiseLike<unknown> | undefined)?.then !== 'function') return
    const settled = () => {
      try {
        if (this.runs.get(runId) !== span) return
        this.forget(runId, this.clockOf().now())
        span.setAttribute('error.type', '_OTHER')
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the run ended without finishing' })
        span.end(this.time.at(this.clockOf()))
      } catch {
        // Telemetry never changes a run's outcome.
      }
    }
    Promise.resolve(result).then(settled, settled)
  }

  /** The run is over: forgotten, and its attempt in flight, if any, ended at `at`. */
  private forget(runId: string, at: number): void {
    this.runs.delete(runId)
    this.layered.delete(runId)
    this.endLeftover(runId, at)
  }

  private openChat(runId: string, e: { at: number; turn: number; model: string; provider?: string; attempt: number }): Chat {
    const { clean } = this
    const model = clean(e.model)
    const attributes: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, 'shallot.model.attempt': e.attempt }
    const provider = providerName(e.provider, clean)
    if (provider !== undefined) attributes['gen_ai.provider.name'] = provider
    const span = this.tracer.startSpan(
      `chat ${model}`,
      { kind: SpanKind.CLIENT, startTime: this.time.at(this.clockOf(), e.at), attributes },
      this.parentOf(runId),
    )
    return { span, key: chatKey(e) }
  }

  /** An attempt that never reported (the run was cancelled under it) ends with the run, not never. */
  private endLeftover(runId: string, at: number): void {
    const chat = this.chats.get(runId)
    if (chat === undefined) return
    this.chats.delete(runId)
    chat.span.setAttribute('error.type', 'cancelled')
    chat.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the attempt ended with the run' })
    chat.span.end(this.time.at(this.clockOf(), at))
  }

  private onModelCall(event: ModelCall): void {
    const { clean } = this
    const run = this.runs.get(event.runId)
    const provider = providerName(event.provider, clean)
    if (this.layered.has(event.runId)) {
      if (provider !== undefined) run?.setAttribute('gen_ai.provider.name', provider)
      return
    }
    let chat = this.chats.get(event.runId)
    if (chat !== undefined && chat.key === chatKey(event)) this.chats.delete(event.runId)
    else chat = this.openChat(event.runId, { ...event, at: event.at - event.durationMs })
    const { span } = chat
    const base: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': clean(event.model) }
    if (provider !== undefined) {
      base['gen_ai.provider.name'] = provider
      // The run's provider is the last one that was asked: the one its answer came from.
      run?.setAttribute('gen_ai.provider.name', provider)
    }
    this.recordUsage(span, event, base)
    if (event.finishReason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [clean(event.finishReason)])
    span.setAttribute('shallot.model.tool_calls', event.toolCalls)
    const metric: Attributes = { ...base }
    if (event.error !== undefined) {
      // The code core classified (rate_limited, timeout, 503, ECONNRESET); the message is the status's, sanitized.
      const type = clean(event.code ?? '_OTHER').slice(0, 64)
      metric['error.type'] = type
      span.setAttribute('error.type', type)
      span.setStatus({ code: SpanStatusCode.ERROR, message: clean(event.error) })
    }
    span.end(this.time.at(this.clockOf(), event.at))
    this.instruments.duration.record(Math.max(0, event.durationMs) / 1000, metric)
  }

  /** The attempt's input and output tokens, on its span and in the token histogram. */
  private recordUsage(span: Span, event: ModelCall, base: Attributes): void {
    const input = tokens(event.usage?.inputTokens)
    const output = tokens(event.usage?.outputTokens)
    if (input !== undefined) {
      span.setAttribute('gen_ai.usage.input_tokens', input)
      this.instruments.tokens.record(input, { ...base, 'gen_ai.token.type': 'input' })
    }
    if (output !== undefined) {
      span.setAttribute('gen_ai.usage.output_tokens', output)
      this.instruments.tokens.record(output, { ...base, 'gen_ai.token.type': 'output' })
    }
  }
}
