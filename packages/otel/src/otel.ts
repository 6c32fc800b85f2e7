import { context, type Meter, metrics, type Span, type Tracer, trace } from '@opentelemetry/api'
import type { AgentEventListener } from '@shallot/agent'
import {
  type Clock,
  type Layer,
  type Middleware,
  type ModelMiddleware,
  parseOptions,
  type Stack,
  systemClock,
  type ToolContext,
} from '@shallot/core'
import { z } from 'zod'
import { agentSpans } from './agent-spans.js'
import { ClockTime, MAX_ATTRIBUTE_CHARS, sanitizerOf } from './attributes.js'
import { instrumentsOf } from './instruments.js'
import { modelSpans } from './model-spans.js'
import { SCOPE } from './scope.js'
import { AttachedCalls, finishToolSpan, observeToolEvent, startToolSpan, type ToolSpans } from './tool-spans.js'

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

/**
 * What `otel()` returns: one layer with a side for each kind of call, and what lets it trace from the
 * stack's and the agent's events wherever it sits in the onion.
 */
export interface OtelLayer extends Layer {
  readonly name: 'otel'
  /** Listed in `middleware`: an `execute_tool {tool}` span per logical tool call. */
  readonly wrapToolCall: Middleware
  /**
   * Listed in `modelMiddleware`: a `chat {model}` span around each `next()`, child of the run's span.
   * With it, `onAgentEvent` opens no chat spans of its own for that run, so an attempt is traced once.
   */
  readonly wrapModelCall: ModelMiddleware
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
}

/**
 * OpenTelemetry GenAI spans, one layer for both lists. Listed in `middleware`, each logical tool call
 * is an `execute_tool {tool}` span, with every layer event as a span event, the soft error's code as
 * `error.type`, and the active context handed to the inner layers, so spans the tool starts are its
 * children; attempts are span events (`retry.scheduled`, `timeout.expired`, ...) and
 * `shallot.tool.attempts`. Attached to its stack it traces from the stack's events and may sit
 * anywhere in the onion; unattached it must be outermost, since layers outside it are not seen.
 * Listed in `modelMiddleware`, each model call is a `chat {model}` span (outside a retry layer one per
 * logical call, inside it one per attempt). Both sides and `onAgentEvent` share one tracer, meter and
 * set of secrets, so the chat and tool spans are children of the run's `invoke_agent` span.
 *
 * @example
 * const tracing = otel()
 * const agent = createAgent({ model, tools, middleware: [...defaultMiddleware(), tracing], modelMiddleware: [tracing], onEvent: tracing.onAgentEvent })
 * tracing.attach(agent.stack)
 */
export function otel(options: OtelOptions = {}): OtelLayer {
  const parsed = parseOptions('otel()', optionsSchema, options)
  const tracer = parsed.tracer ?? trace.getTracer(SCOPE.name, SCOPE.version)
  const instruments = instrumentsOf(parsed.meter ?? metrics.getMeter(SCOPE.name, SCOPE.version))
  const text = sanitizerOf(parsed.secrets)
  const time = new ClockTime()
  // Runs seen through onAgentEvent, so tool and chat spans are children of their run's span.
  let agentClock: Clock = systemClock
  const agent = agentSpans(tracer, instruments, text, time, () => agentClock)
  const spans: ToolSpans = {
    tracer,
    instruments,
    text,
    clean: (s: string) => text.text(s, MAX_ATTRIBUTE_CHARS),
    time,
    runSpan: agent.runSpan,
  }
  const calls = new AttachedCalls(spans)

  async function otelLayer(ctx: ToolContext, next: () => Promise<void>): Promise<void> {
    if (calls.attached > 0) {
      const call = calls.open.get(ctx.callSeq)
      // The stack's events own the span; the layer only makes it the context of what runs inside.
      if (call !== undefined) return context.with(trace.setSpan(context.active(), call.span), next)
    }
    const started = ctx.clock.now()
    let span: Span
    try {
      span = startToolSpan(
        spans,
        { tool: ctx.call.name, callId: ctx.call.id, runId: ctx.run.id, turn: ctx.run.turn, effect: ctx.tool?.effect, at: started },
        ctx.clock,
      )
    } catch {
      // A tracer that cannot start a span costs the trace, never the call.
      return next()
    }
    let done = false
    const traced = { span, settled: () => done }
    const emit = ctx.emit
    ctx.emit = function emitAndTrace(type: string, fields?: Record<string, unknown>): void {
      emit.call(ctx, type, fields)
      observeToolEvent(spans, ctx, traced, type, fields)
    }
    let failure: { error: unknown } | undefined
    try {
      await context.with(trace.setSpan(context.active(), span), next)
    } catch (error) {
      failure = { error }
    }
    done = true
    try {
      finishToolSpan(spans, ctx, span, started, failure)
    } catch {
      // Telemetry never changes a call's outcome.
    }
    if (failure !== undefined) throw failure.error
  }
  function attach(stack: Stack): () => void {
    const clock = stack.clock
    agentClock = clock
    calls.attached++
    const owner = {}
    const off = stack.on((event) => calls.onStackEvent(owner, clock, event))
    let on = true
    return () => {
      if (!on) return
      on = false
      calls.attached--
      off()
      calls.detach(owner, clock)
    }
  }
  return Object.freeze({
    name: 'otel',
    wrapToolCall: otelLayer,
    wrapModelCall: modelSpans({ tracer, instruments, text, time, runSpan: agent.runSpan, traced: agent.traced }),
    attach,
    onAgentEvent: agent.listener,
  })
}
