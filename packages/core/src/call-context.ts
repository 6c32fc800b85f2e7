import { fingerprintOf, type ParsedArgs, parseEagerly, parseNow } from './call-args.js'
import type { SignalLink } from './cancellation.js'
import { abortReason } from './cancellation.js'
import type { AnyTool, Clock, Logger, Middleware, RunContext, ToolCall, ToolContext, ToolOutput, TraceEvent } from './types.js'

/** Where a call's events go: the stack's logger and listeners. One per stack, shared by its calls. */
export type EventSink = (ctx: CallContext, event: TraceEvent) => void

/** What every call of one stack shares. */
export interface CallShared {
  readonly clock: Clock
  readonly random: () => number
  readonly stackKey: object
  readonly toolNames: () => readonly string[]
  readonly sink: EventSink
}

/** What one call brings: the call as guarded, its tool, run, signal, logger and number. */
export interface CallFacts {
  readonly call: ToolCall
  readonly tool: AnyTool | undefined
  readonly run: RunContext
  readonly signal: AbortSignal | SignalLink
  readonly log: Logger
  readonly callSeq: number
}

/**
 * The stack's implementation of {@link ToolContext}: one per call, with the call's state private and
 * what a layer reads (`args`, `fingerprint`, `signal`) worked out the first time it is read.
 */
export class CallContext implements ToolContext {
  #call: ToolCall
  readonly tool: AnyTool | undefined
  readonly run: RunContext
  readonly stackKey: object
  readonly callSeq: number
  attempt = 1
  executions = 0
  /** The attempt in which the tool last ran (0: never), so the terminal can refuse a second run in one attempt. */
  executedAttempt = 0
  /**
   * Declared on ToolContext by `@shallot/idempotency` (declaration merging); the stack's part is to
   * forward it to the tool's `execute`, which may pass it upstream.
   */
  idempotencyKey?: string
  result?: ToolOutput | undefined
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  readonly trace: TraceEvent[] = []
  /** Once the call has settled, later events (a late result, say) reach listeners but not the returned trace. */
  settled = false
  /** The stack's own bookkeeping for the call, read when it settles: on the context, so a blocked call holds no record beside it. */
  startedAt = 0
  watched = false
  onion: Middleware | undefined = undefined
  inner: ((ctx: CallContext) => Promise<void>) | undefined = undefined
  /** The call's signal as dispatch made it (the run's, the caller's, or a link of both), before any layer set its own. */
  readonly callSignal: AbortSignal | SignalLink
  #signal: AbortSignal | SignalLink
  readonly #sink: EventSink
  readonly #toolNames: () => readonly string[]
  #parsed: ParsedArgs | undefined
  #fingerprint: string | undefined

  constructor(shared: CallShared, facts: CallFacts) {
    this.#call = facts.call
    this.tool = facts.tool
    this.run = facts.run
    this.callSeq = facts.callSeq
    this.callSignal = facts.signal
    this.#signal = facts.signal
    this.log = facts.log
    this.stackKey = shared.stackKey
    this.clock = shared.clock
    this.random = shared.random
    this.#sink = shared.sink
    this.#toolNames = shared.toolNames
  }

  get call(): ToolCall {
    return this.#call
  }

  /**
   * Replaced only by a layer that runs the inner layers with other arguments (an approval with edited
   * arguments): the parse and the fingerprint are of the call as it now stands, so the tool never runs
   * with the arguments it replaced.
   */
  set call(value: ToolCall) {
    this.#call = value
    this.#parsed = undefined
    this.#fingerprint = undefined
  }

  /** The parse, made once: on first read, or before the onion for a schema that may need an async parse. */
  parsedArgs(): ParsedArgs {
    let parsed = this.#parsed
    if (parsed === undefined) {
      parsed = parseNow(this.tool, this.call, this.#toolNames)
      this.#parsed = parsed
    }
    return parsed
  }

  /**
   * Parses before the first layer runs, for a tool whose schema is new to the stack or async: a
   * promise only when the schema needs an async parse, so a synchronous one adds no await.
   */
  parseEagerly(tool: AnyTool): Promise<void> | undefined {
    const parsed = parseEagerly(tool, this.call)
    if (!(parsed instanceof Promise)) {
      this.#parsed = parsed
      return undefined
    }
    return parsed.then((settled) => {
      this.#parsed = settled
    })
  }

  get args(): unknown {
    const parsed = this.parsedArgs()
    if (parsed.ok) return parsed.value
    throw parsed.error
  }

  get fingerprint(): string {
    let fingerprint = this.#fingerprint
    if (fingerprint === undefined) {
      fingerprint = fingerprintOf(this.call, this.parsedArgs())
      this.#fingerprint = fingerprint
    }
    return fingerprint
  }

  get signal(): AbortSignal {
    const current = this.#signal
    return current instanceof AbortSignal ? current : current.signal
  }

  set signal(value: AbortSignal | SignalLink) {
    this.#signal = value
  }

  /** The signal as the layers left it, a link not made real: what the terminal follows. */
  signalSource(): AbortSignal | SignalLink {
    return this.#signal
  }

  async runTool(signal: AbortSignal): Promise<unknown> {
    const tool = this.tool
    if (tool === undefined) throw (this.parsedArgs() as { readonly error: unknown }).error
    const args = this.args
    if (signal.aborted) throw abortReason(signal)
    this.run.budget.spend(`tool:${tool.name}`)
    this.executions++
    const value = await tool.execute(args, {
      call: this.call,
      signal,
      idempotencyKey: this.idempotencyKey,
      attempt: this.attempt,
      log: this.log,
    })
    if (signal.aborted) throw abortReason(signal)
    return value
  }

  emit(type: string, fields?: Record<string, unknown>): void {
    const event: TraceEvent = Object.assign({}, fields, { type, at: this.clock.now() })
    if (!this.settled) this.trace.push(event)
    this.#sink(this, event)
  }
}
