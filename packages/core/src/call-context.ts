import { fingerprintOf, type ParsedArgs, parseEagerly, parseNow } from './call-args.js'
import { type AbortSource, abortReason } from './channel.js'
import type {
  AnyTool,
  Clock,
  DeferredSignal,
  Logger,
  Middleware,
  RunContext,
  ToolCall,
  ToolContext,
  ToolOutput,
  TraceEvent,
} from './types.js'

/** Where a call's events go: the stack's logger and listeners. One per stack, shared by its calls. */
export type EventSink = (ctx: CallContext, event: TraceEvent) => void

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
  /** The call's signal as dispatch made it (the run's, the caller's, or both linked), before any layer deferred its own. */
  readonly callSignal: AbortSource
  #current: AbortSignal | DeferredSignal
  readonly #sink: EventSink
  readonly #toolNames: () => readonly string[]
  #parsed: ParsedArgs | undefined
  #fingerprint: string | undefined

  constructor(
    call: ToolCall,
    tool: AnyTool | undefined,
    run: RunContext,
    signal: AbortSource,
    log: Logger,
    clock: Clock,
    random: () => number,
    sink: EventSink,
    toolNames: () => readonly string[],
    stackKey: object,
    callSeq: number,
  ) {
    this.#call = call
    this.tool = tool
    this.run = run
    this.stackKey = stackKey
    this.callSeq = callSeq
    this.callSignal = signal
    this.#current = signal
    this.log = log
    this.clock = clock
    this.random = random
    this.#sink = sink
    this.#toolNames = toolNames
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
