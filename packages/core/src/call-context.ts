import type { AbortSource } from './channel.js'
import type { AnyTool, Clock, DeferredSignal, Logger, RunContext, ToolCall, ToolContext, ToolOutput, TraceEvent } from './types.js'

/** Where a call's events go: the stack's logger and listeners. One per stack, shared by its calls. */
export type EventSink = (ctx: CallContext, event: TraceEvent) => void

/**
 * The stack's implementation of {@link ToolContext}. A class, so every call's context shares one
 * hidden class and its accessors live on the prototype: an object literal with per-call getters
 * would give each call a shape of its own and cost several microseconds in allocation and GC.
 */
export class CallContext implements ToolContext {
  readonly call: ToolCall
  readonly tool: AnyTool | undefined
  readonly run: RunContext
  attempt = 1
  executions = 0
  /** The attempt in which the tool last ran (0: never), so the terminal can refuse a second run in one attempt. */
  executedAttempt = 0
  idempotencyKey?: string
  result?: ToolOutput | undefined
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  readonly trace: TraceEvent[] = []
  /** Once the call has settled, later events (a late result, say) reach listeners but not the returned trace. */
  settled = false
  #current: AbortSignal | DeferredSignal
  readonly #sink: EventSink

  constructor(
    call: ToolCall,
    tool: AnyTool | undefined,
    run: RunContext,
    signal: AbortSource,
    log: Logger,
    clock: Clock,
    random: () => number,
    sink: EventSink,
  ) {
    this.call = call
    this.tool = tool
    this.run = run
    this.#current = signal
    this.log = log
    this.clock = clock
    this.random = random
    this.#sink = sink
  }

  get signal(): AbortSignal {
    const current = this.#current
    if (current instanceof AbortSignal) return current
    const created = current.signal
    this.#current = created
    return created
  }

  set signal(value: AbortSignal) {
    this.#current = value
  }

  deferSignal(deferred: DeferredSignal): void {
    this.#current = deferred
  }

  currentSignal(): AbortSignal | DeferredSignal {
    return this.#current
  }

  emit(type: string, fields?: Record<string, unknown>): void {
    const event: TraceEvent = { ...fields, type, at: this.clock.now() }
    if (!this.settled) this.trace.push(event)
    this.#sink(this, event)
  }
}
