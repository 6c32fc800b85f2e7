import { needsEagerParse } from './call-args.js'
import { systemClock } from './clock.js'
import { createTerminal } from './dispatcher.js'
import type { LoopError } from './errors.js'
import { guardLogger, silentLogger } from './logger.js'
import { renderError } from './render.js'
import { createRun } from './run.js'
import { beginCall, type StackCore } from './stack-call.js'
import { checkSecrets, type StackOptions, stackConfig, toLayers } from './stack-config.js'
import { numbered, type StackEvent, stackEvents } from './stack-events.js'
import { settleCall } from './stack-settle.js'
import { createSanitizer, type Sanitizer } from './text/sanitize.js'
import type { AnyTool, Clock, CompletedTurn, Logger, Middleware, Next, RunContext, ToolCall, ToolResult } from './types.js'

export type { StackLimits, StackOptions } from './stack-config.js'
export type { CallFinishedEvent, CallStartedEvent, StackEvent } from './stack-events.js'

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
  setMiddleware(middleware: StackOptions['middleware']): void
  /** Subscribes to every call's events; returns the unsubscribe function. */
  on(listener: (event: StackEvent) => void): () => void
  /**
   * A successful output as the model may read it: invisible and bidi characters stripped, the stack's
   * secrets redacted (yours and those its layers declare, with `redactOutput` the built-in patterns too),
   * cut at `limits.maxOutputChars` — exactly what `ToolResult.content` holds. For a host that hands the
   * model a text of its own making (a framework's message built from `value`) instead of `content`.
   */
  modelText(text: string): string
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
  const { limits, policy, argsLimits, tools } = stackConfig(options)
  const names = [...tools.keys()]
  const clock = options.clock ?? systemClock
  const logger = guardLogger(options.logger ?? silentLogger)
  const userSecrets = checkSecrets(options.secrets)
  const sanitizerFor = (onion: Middleware): Sanitizer => createSanitizer({ secrets: [...userSecrets, ...(onion.secrets ?? [])] })
  const events = stackEvents(logger, clock)
  const layers = toLayers(options.middleware, tools)
  const core: StackCore = {
    clock,
    random: options.random ?? Math.random,
    logger,
    logging: logger !== silentLogger,
    limits,
    argsLimits,
    policy,
    render: options.renderError ?? renderError,
    redactOutput: options.redactOutput === true,
    defaultRun: createRun({ id: 'default' }),
    stackKey: Object.freeze({}),
    toolNames: () => names,
    terminal: createTerminal(),
    events,
    sink: events.sink,
    layers,
    text: sanitizerFor(layers.onion),
  }

  async function dispatch(rawCall: ToolCall, dispatchOptions: DispatchOptions = {}): Promise<ToolResult> {
    const call = beginCall(core, rawCall, dispatchOptions)
    try {
      // A schema not yet known to parse synchronously is parsed before the layers run. Only a parse that really is
      // async is waited for: calls dispatched together reach their tools in the order they were dispatched.
      const parsing =
        call.tool !== undefined && call.inner === core.terminal && needsEagerParse(call.tool) ? call.parseEagerly(call.tool) : undefined
      if (parsing !== undefined) await parsing
      await (call.onion as Middleware)(call, call.inner as Next)
    } catch (err) {
      return settleCall(core, call, false, err)
    }
    return settleCall(core, call, true, undefined)
  }

  return {
    tools,
    clock,
    random: core.random,
    logger,
    dispatch,
    describeTool: (tool, run, now) => core.layers.onion.describeTool?.(tool, run, now ?? clock.now(), logger),
    observeTurn: (turn, run) => observeTurn(core, turn, run),
    setMiddleware(middleware) {
      core.layers = toLayers(middleware, tools)
      core.text = sanitizerFor(core.layers.onion)
    },
    on(listener) {
      events.listeners.add(listener)
      return () => events.listeners.delete(listener)
    },
    modelText: (text) => core.text.output(text, core.limits.maxOutputChars, core.redactOutput),
  }
}

/**
 * Shows a completed turn to the layers that watch turns: a `LoopError` ends the run. The onion is always
 * composed, and compose logs any other throw by layer name and shows the turn to the layers behind it.
 */
function observeTurn(core: StackCore, turn: CompletedTurn, run: RunContext): void {
  const observe = core.layers.onion.observeTurn
  if (observe === undefined) return
  const { clock, logger, events } = core
  const emit = (type: string, fields?: Record<string, unknown>) => {
    if (events.listeners.size > 0)
      events.announce(numbered<StackEvent>({ ...fields, type, at: clock.now(), runId: run.id, turn: turn.turn, callId: '', tool: '' }, 0))
  }
  observe(turn, run, { log: logger, emit })
}
