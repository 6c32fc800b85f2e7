import { z } from 'zod'
import { needsEagerParse } from './call-args.js'
import { CallContext, type EventSink } from './call-context.js'
import { type AbortSource, abortReason, ESCALATE_ALL, type EscalationPolicy, escalation, neverAborted, toHard } from './channel.js'
import { systemClock } from './clock.js'
import { compose, MiddlewareUsageError } from './compose.js'
import { defineTool } from './define-tool.js'
import { createTerminal } from './dispatcher.js'
import { LoopError, MAX_HINT_LENGTH, MAX_MESSAGE_LENGTH, type ToolError, type ToolErrorJSON } from './errors.js'
import { guardArgs } from './guard-args.js'
import { newCallId } from './ids.js'
import { LinkedSignal } from './linked-signal.js'
import { guardLogger, isSilent, silentLogger } from './logger.js'
import { OptionsError } from './options.js'
import { optionsParser } from './options-parser.js'
import { type ErrorRenderer, renderError, renderValue } from './render.js'
import { createRun, runSource } from './run.js'
import { followed, stopOf } from './run-stop.js'
import { createSanitizer, type Sanitizer } from './text/sanitize.js'
import { splitOverrides } from './tool-overrides.js'
import type { AnyTool, Clock, CompletedTurn, Logger, Middleware, Next, RunContext, ToolCall, ToolResult, TraceEvent } from './types.js'

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

// The last call's number (ctx.callSeq); it counts calls and carries nothing of them.
let lastCallSeq = 0

/** An event before it is given its `callSeq` (a mapped type: `Omit` would drop the named fields beside the index signature). */
type Unnumbered<E extends StackEvent> = { [K in keyof E as K extends 'callSeq' ? never : K]: E[K] }

/** Gives an event of a call its `callSeq` (0: a turn's event, of no call), not enumerable. */
function numbered<E extends StackEvent>(event: Unnumbered<E>, callSeq: number): E {
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

export interface StackLimits {
  /** Largest accepted arguments, serialized. Default 256 KiB. */
  maxArgsBytes?: number
  /** Deepest accepted nesting of arguments. Default 32. */
  maxArgsDepth?: number
  /** Longest tool output the model reads; longer output is cut with a visible marker. Default 20,000 characters. */
  maxOutputChars?: number
}

export interface StackOptions {
  /** The layers, outermost first. Default: none (the bare dispatcher). */
  middleware?: Middleware | readonly Middleware[]
  tools: readonly AnyTool[] | Readonly<Record<string, AnyTool>>
  clock?: Clock
  random?: () => number
  /** A pino logger (or anything with the same methods). Default: silent. */
  logger?: Logger
  limits?: StackLimits
  /** Renders a soft error as the text the model reads. Default: compact JSON. */
  renderError?: ErrorRenderer
  /**
   * Your secrets, redacted from every text the model reads (error messages, hints, details, refusals,
   * panics; successful output too with `redactOutput`), whichever layer wrote it: literal values
   * (under 4 characters they are ignored) or patterns. Secrets a layer declares (the error
   * classifier's `secrets`) are added to these.
   */
  secrets?: readonly (string | RegExp)[]
  /**
   * Also redact secrets, addresses, paths and e-mail addresses from successful output. Default false:
   * a false positive changes data the model reads (an e-mail it was asked to find, a 10.x address it
   * must configure), and it costs a pass per pattern over every output. Invisible characters are
   * stripped from successful output either way.
   */
  redactOutput?: boolean
  /**
   * Which soft-error categories end the run: `stack.dispatch` rejects with `LoopError('fatal')` /
   * `LoopError('user_input_required')` instead of resolving a soft result, for every caller (an
   * agent, the AI SDK and LangChain adapters, an MCP host, your own loop). Default: both do.
   */
  escalate?: { fatal?: boolean; user?: boolean }
}

export interface DispatchOptions {
  /** The run this call belongs to; default: the stack's own long-lived run (unlimited steps). */
  run?: RunContext
  /** Cancels this call only. */
  signal?: AbortSignal
}

/** A composed stack in front of a set of tools. */
export interface Stack {
  readonly tools: ReadonlyMap<string, AnyTool>
  readonly clock: Clock
  readonly random: () => number
  readonly logger: Logger
  /**
   * Runs one tool call through every layer. Resolves to a {@link ToolResult} for every soft outcome,
   * success or failure; rejects only with a {@link LoopError}.
   */
  dispatch(call: ToolCall, options?: DispatchOptions): Promise<ToolResult>
  /**
   * Notes the layers attach to a tool for the model's next request (e.g. "unavailable"), as of
   * `now` on the stack's clock (read when not given).
   */
  describeTool(tool: AnyTool, run: RunContext, now?: number): string | undefined
  /** Shows a completed turn to the layers that watch turns; rejects the turn only with a `LoopError`. */
  observeTurn?(turn: CompletedTurn, run: RunContext): void
  /** Swaps the layers. Calls in flight finish with the layers they started with. */
  setMiddleware(middleware: Middleware | readonly Middleware[]): void
  /** Subscribes to every call's events; returns the unsubscribe function. */
  on(listener: (event: StackEvent) => void): () => void
}

const DEFAULT_LIMITS = { maxArgsBytes: 256 * 1024, maxArgsDepth: 32, maxOutputChars: 20_000 }

/** The options `createStack` checks with zod: an OptionsError names the option and the value it got. */
const stackOptionsSchema = z.object({
  limits: z
    .strictObject({
      maxArgsBytes: z.number().int().positive().default(DEFAULT_LIMITS.maxArgsBytes),
      maxArgsDepth: z.number().int().positive().max(1000).default(DEFAULT_LIMITS.maxArgsDepth),
      maxOutputChars: z.number().int().positive().default(DEFAULT_LIMITS.maxOutputChars),
    })
    .default(DEFAULT_LIMITS),
  escalate: z.strictObject({ fatal: z.boolean().default(true), user: z.boolean().default(true) }).default(ESCALATE_ALL),
})
const parseStackOptions = optionsParser('createStack()', stackOptionsSchema)

function toolList(tools: StackOptions['tools']): AnyTool[] {
  if (Array.isArray(tools)) return tools as AnyTool[]
  if (typeof tools === 'object' && tools !== null) return Object.values(tools)
  throw new OptionsError('createStack()', [{ path: 'tools', message: 'must be an array or a record of tools made with defineTool()' }])
}

function checkSecrets(secrets: unknown): readonly (string | RegExp)[] {
  if (secrets === undefined) return []
  if (!Array.isArray(secrets))
    throw new OptionsError('createStack()', [
      { path: 'secrets', message: 'must be an array of strings or RegExps, e.g. [process.env.API_KEY]' },
    ])
  for (const [i, secret] of secrets.entries()) {
    if (typeof secret !== 'string' && !(secret instanceof RegExp)) {
      throw new OptionsError('createStack()', [
        { path: `secrets[${i}]`, message: `must be a string or a RegExp (got ${secret === null ? 'null' : typeof secret})` },
      ])
    }
  }
  return secrets
}

/** The details a renderer may show: primitives only, strings sanitized. */
function renderableDetails(details: Record<string, unknown> | undefined, text: Sanitizer): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  if (details === undefined) return out
  try {
    for (const [key, value] of Object.entries(details)) {
      if (typeof value === 'string') out[key] = text.text(value, MAX_MESSAGE_LENGTH)
      else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') out[key] = value
    }
  } catch {
    // A throwing getter in a layer's details must not turn a soft error into a crash; the renderer gets what was read.
  }
  return out
}

/** One set of layers: the composed onion, and the tool definitions it serves in place of the registered ones. */
interface Layers {
  readonly onion: Middleware
  readonly tools: ReadonlyMap<string, AnyTool>
}

function toLayers(middleware: StackOptions['middleware'], tools: ReadonlyMap<string, AnyTool>): Layers {
  const list =
    middleware === undefined ? [] : Array.isArray(middleware) ? (middleware as readonly Middleware[]) : [middleware as Middleware]
  const { layers, overrides } = splitOverrides(list, tools)
  return { onion: compose(layers), tools: overrides === undefined ? tools : new Map([...tools, ...overrides]) }
}

/**
 * The signal of one call: the run's, the dispatch's, or both. Two are linked lazily (nothing is
 * combined unless a layer or the tool reads the signal), never with a per-call `AbortSignal.any`,
 * which a long-lived run signal would keep alive call after call.
 */
function callSignal(run: AbortSource, own: AbortSource | undefined): AbortSource {
  if (own === undefined || own === neverAborted) return run
  // A stop's own signal (a turn's, or the run's read back) is followed as the stop.
  const ownSource = own instanceof AbortSignal ? followed(own) : own
  if (ownSource === run) return run
  if (run === neverAborted) return ownSource
  return new LinkedSignal(run, ownSource)
}

/**
 * Builds a stack: the layers in front of the tools, and the terminal dispatcher behind them.
 *
 * @example
 * const stack = createStack({ middleware: defaultMiddleware(), tools: [readFile] })
 * const result = await stack.dispatch({ id: 'c1', name: 'read_file', args: { path: 'src/main.rs' } })
 * result.ok ? use(result.value) : show(result.content)
 */
export function createStack(options: StackOptions): Stack {
  if (typeof options !== 'object' || options === null) throw new TypeError('createStack() takes an options object { middleware, tools }')
  // Neither given (most stacks): the defaults, parsed once.
  const { limits, escalate } = parseStackOptions(
    options.limits === undefined && options.escalate === undefined ? undefined : { limits: options.limits, escalate: options.escalate },
  )
  const policy: EscalationPolicy = escalate.fatal && escalate.user ? ESCALATE_ALL : escalate
  const argsLimits = { maxBytes: limits.maxArgsBytes, maxDepth: limits.maxArgsDepth }
  const tools = new Map<string, AnyTool>()
  for (const raw of toolList(options.tools)) {
    const tool = defineTool(raw as AnyTool) as AnyTool
    if (tools.has(tool.name))
      throw new OptionsError('createStack()', [{ path: 'tools', message: `two tools are named "${tool.name}"; tool names must be unique` }])
    tools.set(tool.name, tool)
  }
  const names = [...tools.keys()]
  const clock = options.clock ?? systemClock
  const random = options.random ?? Math.random
  const logger = guardLogger(options.logger ?? silentLogger)
  const logging = logger !== silentLogger
  const render = options.renderError ?? renderError
  const userSecrets = checkSecrets(options.secrets)
  const redactOutput = options.redactOutput === true
  const sanitizerFor = (onion: Middleware): Sanitizer => createSanitizer({ secrets: [...userSecrets, ...(onion.secrets ?? [])] })
  const toolNames = () => names
  const terminal = createTerminal()
  const listeners = new Set<(event: StackEvent) => void>()
  const defaultRun = createRun({ id: 'default' })
  // What layers key per-stack state by (ctx.stackKey): one object per stack, standing for nothing else.
  const stackKey: object = Object.freeze({})
  let layers = toLayers(options.middleware, tools)
  // A listener that throws must never change a call's outcome: it is caught, logged the first time, and still called.
  const failedListeners = new WeakSet<(event: StackEvent) => void>()
  // Swapped with the layers: a call that settles after a swap is rendered with the new layers' secrets.
  let text = sanitizerFor(layers.onion)
  const sink: EventSink = (ctx, event) => {
    if (ctx.log !== silentLogger) ctx.log.debug(event, event.type)
    if (listeners.size > 0) {
      // Object.assign, then the keys: a spread with extra keys costs about 15 times more on this V8.
      const shared = Object.assign({}, event) as { -readonly [K in keyof StackEvent]: StackEvent[K] }
      shared.runId = ctx.run.id
      shared.callId = ctx.call.id
      shared.tool = ctx.call.name
      announce(numbered<StackEvent>(shared, ctx.callSeq))
    }
  }
  function announce(event: StackEvent): void {
    for (const listener of listeners) {
      try {
        listener(event)
      } catch (err) {
        if (failedListeners.has(listener)) continue
        failedListeners.add(listener)
        logger.error({ err, event: event.type }, 'a stack.on() listener threw; the call goes on, and its later throws are not logged')
      }
    }
  }
  /** `call.finished`, built only when someone listens. */
  function finished(
    ctx: CallContext,
    outcome: CallFinishedEvent['outcome'],
    durationMs: number,
    replayed: boolean,
    error: { code?: string; category?: string; kind?: string; message?: string } | undefined,
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

  function softResult(ctx: CallContext, error: ToolError, started: number): ToolResult {
    // The one place soft-error text is made safe, whichever layer wrote it: the model reads
    // `content`, and hosts show `error` too.
    const json: ToolErrorJSON = error.toJSON()
    json.message = text.text(json.message, MAX_MESSAGE_LENGTH)
    if (json.hint !== undefined) json.hint = text.text(json.hint, MAX_HINT_LENGTH)
    return {
      callId: ctx.call.id,
      name: ctx.call.name,
      ok: false,
      content: text.output(render(json, ctx.call, renderableDetails(error.details, text)), limits.maxOutputChars, false),
      error: json,
      attempts: ctx.attempt,
      durationMs: clock.now() - started,
      replayed: false,
      trace: ctx.trace,
    }
  }

  /**
   * Everything a call needs before its first await, and what its settling reads back. Kept apart
   * from `dispatch`'s own frame, which stays small: a run blocked in a tool call holds that frame
   * until the tool answers, and each of its registers is memory per blocked call.
   */
  function begin(rawCall: ToolCall, dispatchOptions: DispatchOptions): CallContext {
    if (typeof rawCall !== 'object' || rawCall === null || typeof rawCall.name !== 'string') {
      throw new TypeError('stack.dispatch() takes a tool call { id, name, args }')
    }
    const run = dispatchOptions.run ?? defaultRun
    // The run's stop when it has one (an agent run its caller can cancel), so the run's signal is not made real here.
    // A turn's stop (turn-dispatch.ts) is followed as it is: its `signal` is not read, so not made real.
    const signal: AbortSource = callSignal(runSource(run), stopOf(dispatchOptions) ?? dispatchOptions.signal)
    if (signal.aborted) throw abortReason(signal)
    const { onion, tools: served } = layers
    const started = clock.now()
    const id = typeof rawCall.id === 'string' && rawCall.id !== '' ? rawCall.id : newCallId()
    // A refused value never reaches a layer: the call goes through the onion with no arguments, and
    // the terminal answers with the refusal. So the tool never runs, yet stuck-loop still sees a
    // model that keeps sending the same unusable arguments.
    let args: unknown
    let refusal: ToolError | undefined
    try {
      args = guardArgs(rawCall.args, argsLimits)
    } catch (err) {
      refusal = err as ToolError
    }
    const call: ToolCall = { id, name: rawCall.name, args }
    // No child (pino copies its bindings into a new object per child) for a call nothing will be written about.
    const log = logging && !isSilent(logger) ? logger.child({ runId: run.id, turn: run.turn, callId: id, tool: call.name }) : silentLogger
    const ctx = new CallContext(call, served.get(call.name), run, signal, log, clock, random, sink, toolNames, stackKey, ++lastCallSeq)
    // Decided once per call, so a listener added mid-call never hears a `call.finished` without its `call.started`.
    const watched = listeners.size > 0
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
      announce(numbered<CallStartedEvent>(event, ctx.callSeq))
    }
    ctx.startedAt = started
    ctx.watched = watched
    ctx.onion = onion
    // The terminal is handed the context by compose; only a refusal needs a function of its own.
    ctx.inner = refusal === undefined ? terminal : () => Promise.reject(refusal)
    return ctx
  }

  function succeeded(ctx: CallContext): ToolResult {
    const output = ctx.result
    if (output === undefined) {
      throw new MiddlewareUsageError(
        'the stack settled without a result: a middleware resolved without calling next() or setting ctx.result',
      )
    }
    return {
      callId: ctx.call.id,
      name: ctx.call.name,
      ok: true,
      content: text.output(renderValue(output.value), limits.maxOutputChars, redactOutput),
      value: output.value,
      attempts: ctx.attempt,
      durationMs: clock.now() - ctx.startedAt,
      replayed: output.replayed === true,
      trace: ctx.trace,
    }
  }

  /** A soft error's result, or the hard error (thrown) that ends the run. */
  function failed(ctx: CallContext, err: unknown): ToolResult {
    const { call, log, startedAt: started, watched } = ctx
    const signal = ctx.callSignal
    const hard = toHard(err, signal, call.name, (message) => text.text(message, MAX_MESSAGE_LENGTH))
    if (hard !== undefined) {
      if (log !== silentLogger)
        log.warn(
          { attempts: ctx.attempt, durationMs: clock.now() - started, outcome: 'hard_error', kind: hard.kind },
          'tool call ended the run',
        )
      if (watched) finished(ctx, 'hard_error', clock.now() - started, false, { kind: hard.kind, message: hard.message })
      throw hard
    }
    const result = softResult(ctx, err as ToolError, started)
    const escalated = escalation(result.error as ToolErrorJSON, call.name, policy, err)
    if (escalated !== undefined) {
      if (log !== silentLogger)
        log.warn(
          { attempts: ctx.attempt, durationMs: result.durationMs, outcome: 'hard_error', kind: escalated.kind, code: result.error?.code },
          'tool call ended the run',
        )
      if (watched) finished(ctx, 'hard_error', result.durationMs, false, { ...result.error, kind: escalated.kind })
      throw escalated
    }
    return result
  }

  function reported(ctx: CallContext, result: ToolResult): void {
    if (ctx.log !== silentLogger) {
      ctx.log.info(
        {
          attempts: result.attempts,
          durationMs: result.durationMs,
          outcome: result.ok ? 'ok' : 'soft_error',
          replayed: result.replayed,
          code: result.error?.code,
          category: result.error?.category,
          message: result.error?.message,
        },
        'tool call',
      )
    }
    if (ctx.watched) finished(ctx, result.ok ? 'ok' : 'soft_error', result.durationMs, result.replayed, result.error)
  }

  /** The call's result once its onion settled, or the hard error that ends the run; the call is closed either way. */
  function settle(ctx: CallContext, ok: boolean, err: unknown): ToolResult {
    let result: ToolResult
    try {
      if (!ok) result = failed(ctx, err)
      else {
        try {
          result = succeeded(ctx)
        } catch (odd) {
          result = failed(ctx, odd)
        }
      }
    } finally {
      ctx.settled = true
      if (ctx.callSignal instanceof LinkedSignal) ctx.callSignal.close()
    }
    reported(ctx, result)
    return result
  }

  function throughOnion(ctx: CallContext): Promise<void> {
    try {
      return (ctx.onion as Middleware)(ctx, ctx.inner as Next)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  // Not async: a call blocked in its tool holds two reaction closures here, not a suspended frame.
  function dispatch(rawCall: ToolCall, dispatchOptions: DispatchOptions = {}): Promise<ToolResult> {
    let call: CallContext
    try {
      call = begin(rawCall, dispatchOptions)
    } catch (err) {
      return Promise.reject(err)
    }
    let parsing: Promise<unknown> | undefined
    if (call.tool !== undefined && call.inner === terminal && needsEagerParse(call.tool)) {
      try {
        parsing = call.parseEagerly(call.tool)
      } catch (err) {
        parsing = Promise.reject(err)
      }
    }
    const layers = parsing === undefined ? throughOnion(call) : parsing.then(() => throughOnion(call))
    return layers.then(
      () => settle(call, true, undefined),
      (err: unknown) => settle(call, false, err),
    )
  }

  return {
    tools,
    clock,
    random,
    logger,
    dispatch,
    describeTool: (tool, run, now) => layers.onion.describeTool?.(tool, run, now ?? clock.now()),
    observeTurn(turn, run) {
      const observe = layers.onion.observeTurn
      if (observe === undefined) return
      const emit = (type: string, fields?: Record<string, unknown>) => {
        if (listeners.size > 0)
          announce(numbered<StackEvent>({ ...fields, type, at: clock.now(), runId: run.id, turn: turn.turn, callId: '', tool: '' }, 0))
      }
      try {
        observe(turn, run, { log: logger, emit })
      } catch (err) {
        if (LoopError.is(err)) throw err
        logger.error({ err, runId: run.id, turn: turn.turn }, 'a layer failed while observing a turn; the run goes on')
      }
    },
    setMiddleware(middleware) {
      layers = toLayers(middleware, tools)
      text = sanitizerFor(layers.onion)
    },
    on(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}
