import type { z } from 'zod'
import type { SignalLink } from './cancellation.js'
import type { ToolErrorJSON } from './errors.js'

/** Plain JSON: what run state and checkpoints may hold. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A tool call as the model sent it. `args` is untrusted until the dispatcher validates it. */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly args: unknown
}

/**
 * What repeating a call does to the world.
 * - `read`: nothing; repeat freely.
 * - `idempotent`: repeating is harmless (or the tool forwards `idempotencyKey` upstream).
 * - `write`: never repeated once the world may have seen it, unless the error is `safeToRepeat`.
 */
export type ToolEffect = (typeof TOOL_EFFECTS)[number]

/**
 * Every {@link ToolEffect}, for schemas that take one (`z.enum(TOOL_EFFECTS)`).
 *
 * @example
 * const effects = z.record(z.string(), z.enum(TOOL_EFFECTS))
 */
export const TOOL_EFFECTS = ['read', 'idempotent', 'write'] as const

/** The minimal pino-compatible logger shallot writes to. A pino logger fits as is. */
export interface Logger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
  child(bindings: Record<string, unknown>): Logger
}

/** Monotonic time and abortable sleep, injected so tests run on virtual time. */
export interface Clock {
  /** Monotonic milliseconds; only differences are meaningful. */
  now(): number
  /** Resolves after `ms`, or rejects with `signal.reason` as soon as `signal` aborts. Leaves nothing behind. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
  /**
   * Optional fast path for layers that only need a callback: calls `fire` after `ms` unless the
   * returned cancel function runs first. Cheaper than an abortable `sleep` (no AbortController).
   */
  timer?(ms: number, fire: () => void): () => void
}

/** What `execute` receives besides its parsed arguments. */
export interface ToolExecuteContext {
  /** The call being served (its id, name and guarded arguments), for tools that report or correlate. */
  readonly call: ToolCall
  readonly signal: AbortSignal
  readonly idempotencyKey: string | undefined
  readonly attempt: number
  readonly log: Logger
}

/**
 * What a tool's `reconcile` learned about an earlier attempt whose outcome was unknown:
 * - `applied`: it took effect; `result` is what `execute` would have returned (JSON).
 * - `not_applied`: it did not take effect; the call may run again.
 * - `unknown`: it cannot tell (yet); `hint` (optional) tells the model what it could do instead.
 */
export type ReconcileAnswer<Output = unknown> =
  | { readonly status: 'applied'; readonly result: Output }
  | { readonly status: 'not_applied' }
  | { readonly status: 'unknown'; readonly hint?: string }

/** A tool the model may call. Build one with `defineTool` so `execute`'s arguments are typed by `input`. */
export interface ToolDefinition<Input extends z.ZodType = z.ZodType, Output = unknown> {
  readonly name: string
  readonly description: string
  readonly input: Input
  readonly effect: ToolEffect
  execute(args: z.output<Input>, context: ToolExecuteContext): Output | Promise<Output>
  /**
   * Optional, for a `write` tool: learns whether an attempt with these arguments and this
   * `idempotencyKey` took effect (a lookup at the same service). A layer that met an unknown
   * outcome may ask it; `attempt` counts its questions. Core never calls it.
   */
  readonly reconcile?:
    | ((args: z.output<Input>, context: ToolExecuteContext) => ReconcileAnswer<Output> | Promise<ReconcileAnswer<Output>>)
    | undefined
}

/** Any tool, whatever its input and output types. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every input type
export type AnyTool = ToolDefinition<any, unknown>

/** The run's step budget: every model call and every tool attempt spends one step. */
export interface Budget {
  readonly maxSteps: number
  readonly used: number
  readonly remaining: number
  /** Spends one step, or throws `LoopError('budget_exhausted')` when none is left. */
  spend(what: string): void
}

/** Per-run facts every call of the run shares. */
export interface RunContext {
  readonly id: string
  /** 1-based index of the turn being dispatched; 0 outside an agent. */
  readonly turn: number
  /** Plain JSON, checkpointed after every completed turn; middlewares keep per-run counters here under their own key. */
  readonly state: Record<string, Json>
  readonly budget: Budget
  /** Aborts when the run is cancelled. */
  readonly signal: AbortSignal
}

/** One thing that happened during a call, in the order it happened; kept on the ToolResult. */
export interface TraceEvent {
  readonly type: string
  /** `clock.now()` when it happened. */
  readonly at: number
  readonly [field: string]: unknown
}

/** What the terminal dispatcher (or a replaying layer) leaves on `ctx.result`. */
export interface ToolOutput {
  value: unknown
  /** True when a layer answered from a stored earlier result instead of running the tool. */
  replayed?: boolean
}

/**
 * The shared object every middleware of one call sees: what every layer may use. A layer that
 * adds a field of its own declares it by declaration merging, as idempotency does for its key:
 *
 * @example
 * declare module '@shallot/core' {
 *   interface ToolContext {
 *     tenant?: string
 *   }
 * }
 */
export interface ToolContext {
  readonly call: ToolCall
  /** `undefined` when the model asked for a tool that does not exist. */
  readonly tool: AnyTool | undefined
  readonly run: RunContext
  /**
   * The stack this call runs in: one opaque object per `createStack()`, the same for all its calls
   * and runs. A layer that keeps state between calls (a cache, samples, counters) keys it by this
   * (in a WeakMap), so one layer given to two stacks never lets one read the other's state.
   */
  readonly stackKey: object
  /**
   * The call's number, unique among the calls of this process (the caller's `call.id` may repeat:
   * two stacks, or two calls with the same id at once). Every stack event of the call carries it as
   * `callSeq`, so a listener's state for a call is found from the call's layers and never mixed.
   */
  readonly callSeq: number
  /**
   * The arguments as the tool's schema parses them (defaults filled in): parsed once per call, on
   * first read, and shared by every layer and the tool, which never parse again. Reading it throws
   * the soft `invalid_arguments` (or `unknown_tool`) error the tool would answer with.
   */
  readonly args: unknown
  /**
   * The call's identity: tool name and canonical parsed arguments, hashed (the guarded raw arguments
   * when they do not parse). Stuck-loop counts repeats by it; idempotency derives keys from it.
   */
  readonly fingerprint: string
  /**
   * The run's cancellation, the caller's, and whatever an outer layer added (a deadline). A layer may
   * hand the layers inside a signal of its own by setting it, a real one or a `SignalLink` (whose
   * AbortSignal is made only if somebody reads it), and gives the old one back when it is done.
   */
  get signal(): AbortSignal
  set signal(value: AbortSignal | SignalLink)
  /** 1-based; bumped by retry before each repeat. */
  attempt: number
  /** How many times the tool's `execute` was actually invoked for this call (0: it never ran). Counted by the stack. */
  readonly executions: number
  result?: ToolOutput | undefined
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  /** Events so far, in order. */
  readonly trace: TraceEvent[]
  /** Records an event on the trace and hands it to the stack's listeners. */
  emit(type: string, fields?: Record<string, unknown>): void
  /**
   * Runs the tool once more beside `next()`, on `signal`, the way the terminal does: with the call's
   * parsed arguments, spending one step and counting one execution. For a layer that races a
   * second attempt against the first (hedging); every other layer calls `next()`.
   */
  runTool(signal: AbortSignal): Promise<unknown>
}

/** The inner layers, as seen from one layer. May be called again once the previous call settled. */
export type Next = () => Promise<void>

/**
 * One layer of the onion. First in a list is outermost.
 * `describeTool` (optional) lets a layer annotate a tool for the model's next request, e.g. "unavailable";
 * `now` is the stack clock's `now()` at the time of the request; `log` is the stack's logger, which a
 * composed layer uses to log a describer that threw (the tool is then listed without that note).
 * `secrets` (optional) are values the stack must redact from all model text.
 */
export interface Middleware {
  (ctx: ToolContext, next: Next): Promise<void>
  describeTool?: ((tool: AnyTool, run: RunContext, now: number, log?: Logger) => string | undefined) | undefined
  /**
   * Secrets this layer was given (literal values or patterns). The stack redacts them from every
   * text the model reads, whichever layer wrote it, not only from this layer's own text.
   */
  secrets?: readonly (string | RegExp)[] | undefined
  /**
   * Optional: called by an agent after each completed turn with tool calls (the model's reply and
   * the results it will read), before the turn is checkpointed. Throwing a `LoopError` ends the run
   * with it; any other throw is logged and ignored. For layers that watch the run, not one call.
   */
  observeTurn?: ((turn: CompletedTurn, run: RunContext, env: TurnEnv) => void) | undefined
}

/** What an observing layer may use: the stack's logger, and its listeners (`stack.on`) for events of the turn. */
export interface TurnEnv {
  readonly log: Logger
  /** Hands `{ type, at, runId, turn, callId: '', tool: '', ...fields }` to the stack's listeners: an event of the turn, not of a call. */
  emit(type: string, fields?: Record<string, unknown>): void
}

/** What {@link Middleware.observeTurn} is shown: one completed turn, as the transcript will hold it. */
export interface CompletedTurn {
  readonly turn: number
  /** The text the model sent beside its tool calls, if any. */
  readonly text: string | undefined
  readonly calls: readonly ToolCall[]
  /** One per call, in call order. */
  readonly results: readonly ToolResult[]
}

/** What `stack.dispatch` resolves to for every soft outcome, success or failure. */
export interface ToolResult {
  readonly callId: string
  readonly name: string
  readonly ok: boolean
  /** The text the model reads. */
  readonly content: string
  /** The tool's return value (successes only). */
  readonly value?: unknown
  /** The structured soft error (failures only). */
  readonly error?: ToolErrorJSON
  readonly attempts: number
  readonly durationMs: number
  readonly replayed: boolean
  readonly trace: readonly TraceEvent[]
}
