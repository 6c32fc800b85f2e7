import { CallContext, type CallShared } from './call-context.js'
import { abortReason, neverAborted, SignalLink } from './cancellation.js'
import type { EscalationPolicy } from './channel.js'
import type { createTerminal } from './dispatcher.js'
import type { ToolError } from './errors.js'
import { guardArgs } from './guard-args.js'
import { newCallId } from './ids.js'
import { isSilent, silentLogger } from './logger.js'
import type { ErrorRenderer } from './render.js'
import type { Layers, StackLimits } from './stack-config.js'
import { type CallStartedEvent, numbered, type StackEvents, type Unnumbered } from './stack-events.js'
import type { Sanitizer } from './text/sanitize.js'
import type { Logger, RunContext, ToolCall } from './types.js'

/** What every call of one stack shares: made once by `createStack`; `layers` and `text` are swapped by `setMiddleware`. */
export interface StackCore extends CallShared {
  readonly logger: Logger
  /** The logger is not the silent one: a call may get a child logger. */
  readonly logging: boolean
  readonly limits: Required<StackLimits>
  readonly argsLimits: { readonly maxBytes: number; readonly maxDepth: number }
  readonly policy: EscalationPolicy
  readonly render: ErrorRenderer
  readonly redactOutput: boolean
  /** The run of a call dispatched without one: the stack's own long-lived run (unlimited steps). */
  readonly defaultRun: RunContext
  readonly terminal: ReturnType<typeof createTerminal>
  readonly events: StackEvents
  layers: Layers
  /** Swapped with the layers: a call that settles after a swap is rendered with the new layers' secrets. */
  text: Sanitizer
}

/** The options of one `stack.dispatch` call (the public `DispatchOptions`). */
export interface CallOptions {
  run?: RunContext
  signal?: AbortSignal
}

// The last call's number (ctx.callSeq); it counts calls and carries nothing of them.
let lastCallSeq = 0

/**
 * The signal of one call: the run's, the dispatch's, or a link of both, released when the call
 * settles so a long-lived run signal keeps nothing of the call.
 */
function callSignal(run: AbortSignal, own: AbortSignal | undefined): AbortSignal | SignalLink {
  if (own === undefined || own === neverAborted || own === run) return run
  return run === neverAborted ? own : new SignalLink(run, own)
}

/**
 * Everything a call needs before its first await, and what its settling reads back. Kept apart
 * from `dispatch`'s own frame, which stays small: a run blocked in a tool call holds that frame
 * until the tool answers, and each of its registers is memory per blocked call.
 */
export function beginCall(core: StackCore, rawCall: ToolCall, dispatchOptions: CallOptions): CallContext {
  if (typeof rawCall !== 'object' || rawCall === null || typeof rawCall.name !== 'string') {
    throw new TypeError('stack.dispatch() takes a tool call { id, name, args }')
  }
  const { clock, logger, events } = core
  const run = dispatchOptions.run ?? core.defaultRun
  const signal = callSignal(run.signal, dispatchOptions.signal)
  if (signal.aborted) throw abortReason(signal)
  const { onion, tools: served } = core.layers
  const started = clock.now()
  const id = typeof rawCall.id === 'string' && rawCall.id !== '' ? rawCall.id : newCallId()
  // A refused value never reaches a layer: the call goes through the onion with no arguments, and
  // the terminal answers with the refusal. So the tool never runs, yet stuck-loop still sees a
  // model that keeps sending the same unusable arguments.
  let args: unknown
  let refusal: ToolError | undefined
  try {
    args = guardArgs(rawCall.args, core.argsLimits)
  } catch (err) {
    refusal = err as ToolError
  }
  const call: ToolCall = { id, name: rawCall.name, args }
  // No child (pino copies its bindings into a new object per child) for a call nothing will be written about.
  const log =
    core.logging && !isSilent(logger) ? logger.child({ runId: run.id, turn: run.turn, callId: id, tool: call.name }) : silentLogger
  const ctx = new CallContext(core, { call, tool: served.get(call.name), run, signal, log, callSeq: ++lastCallSeq })
  // Decided once per call, so a listener added mid-call never hears a `call.finished` without its `call.started`.
  const watched = events.listeners.size > 0
  if (watched) {
    const event: Unnumbered<CallStartedEvent> = {
      type: 'call.started',
      at: started,
      runId: run.id,
      callId: id,
      tool: call.name,
      turn: run.turn,
      effect: ctx.tool?.effect,
    }
    events.announce(numbered<CallStartedEvent>(event, ctx.callSeq))
  }
  ctx.startedAt = started
  ctx.watched = watched
  ctx.onion = onion
  // The terminal is handed the context by compose; only a refusal needs a function of its own.
  ctx.inner = refusal === undefined ? core.terminal : () => Promise.reject(refusal)
  return ctx
}
