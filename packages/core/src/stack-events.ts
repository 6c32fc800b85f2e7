import type { CallContext, EventSink } from './call-context.js'
import { callListener } from './call-listener.js'
import { silentLogger } from './logger.js'
import type { Clock, Logger, TraceEvent } from './types.js'

/** An event from any call of the stack, with the call it belongs to. */
export interface StackEvent extends TraceEvent {
  readonly runId: string
  readonly callId: string
  readonly tool: string
  /**
   * The call's `ctx.callSeq`: unique per call in the process, where `callId` may repeat. What a
   * listener keys per-call state by. Not enumerable: an identity, not data, so it stays out of logs,
   * reports and copies of the event. 0 on a turn's events, which belong to no call.
   */
  readonly callSeq: number
}

/** An event before it is given its `callSeq` (a mapped type: `Omit` would drop the named fields beside the index signature). */
export type Unnumbered<E extends StackEvent> = { [K in keyof E as K extends 'callSeq' ? never : K]: E[K] }

/** Gives an event of a call its `callSeq` (0: a turn's event, of no call), not enumerable. */
export function numbered<E extends StackEvent>(event: Unnumbered<E>, callSeq: number): E {
  return Object.defineProperty(event, 'callSeq', { value: callSeq }) as unknown as E
}

/**
 * The first event of every call, before any layer runs; built only when someone listens.
 *
 * @example
 * stack.on((e) => { if (e.type === 'call.started') spans.set(e.callSeq, start(e.tool, e.at)) })
 */
export interface CallStartedEvent extends StackEvent {
  readonly type: 'call.started'
  readonly turn: number
  /** The tool's declared effect; undefined for a tool the stack does not know. */
  readonly effect: string | undefined
}

/**
 * The last event of every call that started, once it settled: a result (`ok`, `soft_error`) or a
 * hard stop (`hard_error`). Late events of the call (a late result) may still follow it.
 *
 * @example
 * stack.on((e) => { if (e.type === 'call.finished' && e.outcome !== 'ok') alert(e.tool, e.code ?? e.kind) })
 */
export interface CallFinishedEvent extends StackEvent {
  readonly type: 'call.finished'
  readonly turn: number
  readonly outcome: 'ok' | 'soft_error' | 'hard_error'
  /** The soft error's code (a hard stop escalated from a soft error keeps it). */
  readonly code: string | undefined
  /** The soft error's category. */
  readonly category: string | undefined
  /** The hard stop's kind. */
  readonly kind: string | undefined
  /** The error's message, sanitized like the text the model reads. */
  readonly message: string | undefined
  readonly attempts: number
  readonly executions: number
  readonly replayed: boolean
  readonly durationMs: number
}

/** What `call.finished` says of an error. */
export type FinishedError = { code?: string; category?: string; kind?: string; message?: string } | undefined

/** One stack's listeners (`stack.on`), and how its calls' events reach them; made once per stack. */
export interface StackEvents {
  readonly listeners: Set<(event: StackEvent) => void>
  /** Where a call's `ctx.emit` goes: the call's logger, then the listeners. */
  readonly sink: EventSink
  /** Hands an event to every listener; a listener that throws never changes a call's outcome. */
  announce(event: StackEvent): void
  /** `call.finished`, built only when someone listens. */
  finished(ctx: CallContext, outcome: CallFinishedEvent['outcome'], durationMs: number, replayed: boolean, error: FinishedError): void
}

export function stackEvents(logger: Logger, clock: Clock): StackEvents {
  const listeners = new Set<(event: StackEvent) => void>()
  // A listener that throws must never change a call's outcome: it is caught, logged the first time, and still called.
  const failedListeners = new WeakSet<(event: StackEvent) => void>()
  const sink: EventSink = (ctx, event) => {
    if (ctx.log !== silentLogger) ctx.log.debug(event, event.type)
    if (listeners.size > 0) {
      const shared = { ...event, runId: ctx.run.id, callId: ctx.call.id, tool: ctx.call.name } as StackEvent
      announce(numbered<StackEvent>(shared, ctx.callSeq))
    }
  }
  function threw(listener: (event: StackEvent) => void, err: unknown, type: string): void {
    if (failedListeners.has(listener)) return
    failedListeners.add(listener)
    logger.error({ err, event: type }, 'a stack.on() listener threw; the call goes on, and its later throws are not logged')
  }
  function announce(event: StackEvent): void {
    // An async listener rejects instead of throwing: logged the same way.
    for (const listener of listeners) callListener(listener, event, (err) => threw(listener, err, event.type))
  }
  function finished(
    ctx: CallContext,
    outcome: CallFinishedEvent['outcome'],
    durationMs: number,
    replayed: boolean,
    error: FinishedError,
  ): void {
    const event: Unnumbered<CallFinishedEvent> = {
      type: 'call.finished',
      at: clock.now(),
      runId: ctx.run.id,
      callId: ctx.call.id,
      tool: ctx.call.name,
      turn: ctx.run.turn,
      outcome,
      code: error?.code,
      category: error?.category,
      kind: error?.kind,
      message: error?.message,
      attempts: ctx.attempt,
      executions: ctx.executions,
      replayed,
      durationMs,
    }
    announce(numbered<CallFinishedEvent>(event, ctx.callSeq))
  }
  return { listeners, sink, announce, finished }
}
