import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { AgentEvent, AgentEventListener, AgentScope, Clock } from '@shallot/core'
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
  const clean = (s: string) => text.text(s, MAX_ATTRIBUTE_CHARS)
  const runs = new Map<string, Span>()
  // The attempt in flight of each run: opened by `within`, ended by its `model.call` event.
  const chats = new Map<string, Chat>()
  // Runs whose chat spans the model layer (`otel().model`) makes: the listener opens none of its own.
  const layered = new Set<string>()

  const parentOf = (runId: string): Context => {
    const run = runs.get(runId)
    return run === undefined ? context.active() : trace.setSpan(context.active(), run)
  }

  function openRun(runId: string, at: number): Span {
    const span = tracer.startSpan(
      'invoke_agent',
      {
        kind: SpanKind.INTERNAL,
        startTime: time.at(clockOf(), at),
        attributes: { 'gen_ai.operation.name': 'invoke_agent', 'shallot.run.id': clean(runId) },
      },
      context.active(),
    )
    runs.set(runId, span)
    return span
  }

  function openChat(runId: string, e: { at: number; turn: number; model: string; provider?: string; attempt: number }): Chat {
    const model = clean(e.model)
    const attributes: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, 'shallot.model.attempt': e.attempt }
    const provider = providerName(e.provider, clean)
    if (provider !== undefined) attributes['gen_ai.provider.name'] = provider
    const span = tracer.startSpan(
      `chat ${model}`,
      { kind: SpanKind.CLIENT, startTime: time.at(clockOf(), e.at), attributes },
      parentOf(runId),
    )
    return { span, key: chatKey(e) }
  }

  /** An attempt that never reported (the run was cancelled under it) ends with the run, not never. */
  function endLeftover(runId: string, at: number): void {
    const chat = chats.get(runId)
    if (chat === undefined) return
    chats.delete(runId)
    chat.span.setAttribute('error.type', 'cancelled')
    chat.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the attempt ended with the run' })
    chat.span.end(time.at(clockOf(), at))
  }

  function onModelCall(event: ModelCall): void {
    const run = runs.get(event.runId)
    if (layered.has(event.runId)) {
      const provider = providerName(event.provider, clean)
      if (provider !== undefined) run?.setAttribute('gen_ai.provider.name', provider)
      return
    }
    let chat = chats.get(event.runId)
    if (chat !== undefined && chat.key === chatKey(event)) chats.delete(event.runId)
    else chat = openChat(event.runId, { ...event, at: event.at - event.durationMs })
    const { span } = chat
    const provider = providerName(event.provider, clean)
    const base: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': clean(event.model) }
    if (provider !== undefined) {
      base['gen_ai.provider.name'] = provider
      // The run's provider is the last one that was asked: the one its answer came from.
      run?.setAttribute('gen_ai.provider.name', provider)
    }
    const input = tokens(event.usage?.inputTokens)
    const output = tokens(event.usage?.outputTokens)
    if (input !== undefined) {
      span.setAttribute('gen_ai.usage.input_tokens', input)
      instruments.tokens.record(input, { ...base, 'gen_ai.token.type': 'input' })
    }
    if (output !== undefined) {
      span.setAttribute('gen_ai.usage.output_tokens', output)
      instruments.tokens.record(output, { ...base, 'gen_ai.token.type': 'output' })
    }
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
    span.end(time.at(clockOf(), event.at))
    instruments.duration.record(Math.max(0, event.durationMs) / 1000, metric)
  }

  function onAgentEvent(event: AgentEvent): void {
    try {
      const clock = clockOf()
      if (event.type === 'run.started') {
        const run = runs.get(event.runId) ?? openRun(event.runId, event.at)
        run.setAttribute('shallot.run.resumed', event.resumed)
      } else if (event.type === 'model.call') onModelCall(event)
      else if (event.type === 'run.finished') {
        const span = runs.get(event.runId)
        if (span === undefined) return
        runs.delete(event.runId)
        layered.delete(event.runId)
        endLeftover(event.runId, event.at)
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
        span.end(time.at(clock, event.at))
      } else {
        const run = runs.get(event.runId)
        if (run === undefined) return
        const { type, at, runId: _r, ...fields } = event
        run.addEvent(type, eventAttributes(fields, text), time.at(clock, at))
      }
    } catch {
      // Telemetry never changes a run's outcome.
    }
  }

  /** A run that ended without `run.finished` (its driver threw) still ends its span. */
  function watchRun(runId: string, span: Span, result: unknown): void {
    if (typeof (result as PromiseLike<unknown> | undefined)?.then !== 'function') return
    const settled = () => {
      try {
        if (runs.get(runId) !== span) return
        runs.delete(runId)
        layered.delete(runId)
        endLeftover(runId, clockOf().now())
        span.setAttribute('error.type', '_OTHER')
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the run ended without finishing' })
        span.end(time.at(clockOf()))
      } catch {
        // Telemetry never changes a run's outcome.
      }
    }
    Promise.resolve(result).then(settled, settled)
  }

  function within<T>(scope: AgentScope, fn: () => T): T {
    let active: Context
    let run: Span | undefined
    try {
      if (scope.type === 'run') {
        run = runs.get(scope.runId) ?? openRun(scope.runId, scope.at)
        active = trace.setSpan(context.active(), run)
      } else if (layered.has(scope.runId)) {
        // The model layer's chat span is already the active context.
        return fn()
      } else {
        endLeftover(scope.runId, scope.at)
        const chat = openChat(scope.runId, scope)
        chats.set(scope.runId, chat)
        active = trace.setSpan(context.active(), chat.span)
      }
    } catch {
      // A tracer that cannot start a span costs the context, never the run.
      return fn()
    }
    const result = context.with(active, fn)
    if (run !== undefined) watchRun(scope.runId, run, result)
    return result
  }

  const listener = Object.assign(onAgentEvent, { within }) satisfies AgentEventListener
  return {
    listener,
    runSpan: (runId: string) => runs.get(runId),
    /** Only runs this listener heard start: their `run.finished` forgets them, so the set stays bounded. */
    traced: (runId: string) => {
      if (runs.has(runId)) layered.add(runId)
    },
  }
}
