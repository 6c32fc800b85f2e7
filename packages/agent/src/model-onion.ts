import {
  abortReason,
  type Clock,
  type Logger,
  LoopError,
  MiddlewareUsageError,
  type ModelCallRequest,
  type ModelContext,
  type ModelInfo,
  type ModelNext,
  type ModelResponse,
  type RunContext,
} from '@shallot/core'
import { describeModelFailure, type SignalLink, untilAborted } from '@shallot/core/kit'
import { type AgentEvent, noAgentEvents } from './agent-events.js'
import { askOnce, called, type ModelCallEnv, observed, providerOf } from './model-call.js'
import type { ModelLink, ModelPrice } from './model-link.js'

/** A composed model onion, as `compose` returns it. */
export type ModelOnion = (ctx: ModelContext, last: ModelNext) => Promise<void>

function infoOf(link: ModelLink): ModelInfo {
  const provider = providerOf(link)
  return provider === undefined ? { name: link.name, adapter: link.adapter } : { name: link.name, provider, adapter: link.adapter }
}

/** The agent's link for the model a layer left in the context; another model (a spare) is priced by its name from `prices`. */
function linkOf(settings: ModelOnionSettings, model: ModelInfo): ModelLink {
  const own = settings.model
  if (own.adapter === model.adapter && own.name === model.name) return own
  return { name: model.name, adapter: model.adapter, price: settings.prices.get(model.name) }
}

const what = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value)

/**
 * What is wrong with a model's answer, or undefined when the loop can read it: `text` becomes the output
 * and each of `toolCalls` is dispatched by its id and name, so a string there would be dispatched letter
 * by letter. Null reads as absent, as the loop has always read it.
 */
function responseFault(response: unknown): string | undefined {
  if (typeof response !== 'object' || response === null) return 'no response object'
  const { text, toolCalls } = response as { text?: unknown; toolCalls?: unknown }
  if (text != null && typeof text !== 'string') return `a response whose text is ${what(text)}, not a string`
  if (toolCalls == null) return undefined
  if (!Array.isArray(toolCalls)) return `a response whose toolCalls is ${what(toolCalls)}, not a list of calls`
  for (let i = 0; i < toolCalls.length; i++) {
    const call = toolCalls[i] as { id?: unknown; name?: unknown } | null
    if (typeof call !== 'object' || call === null || typeof call.id !== 'string' || typeof call.name !== 'string')
      return `a response whose toolCalls[${i}] is not a call with a string id and name`
  }
  return undefined
}

/** A `next()` the onion's layers call once the model call has settled: a kept `next` called later, or one left running. */
const afterSettled = () =>
  new MiddlewareUsageError('a model middleware called next() after the model call settled; await next() inside the layer, once per try')

/**
 * The terminal of the model onion: ONE attempt on `ctx.model`. Stops on a cancelled run, spends the
 * run's 'model' step, asks the adapter until it answers or `ctx.signal` aborts (the run's
 * cancellation, a timeout layer's deadline), checks the answer, and tells the `model.call` event and
 * log line of it, answered or failed.
 */
function terminalOf(env: ModelCallEnv, settings: ModelOnionSettings) {
  // compose hands its final `next` the call's context.
  return async function askModel(ctx: ModelContext): Promise<void> {
    // The context's signal as a layer left it, or the run's own, without making either real.
    const own = ctx instanceof CallContext ? ctx : undefined
    // Once the call settled its run may be over: a late next() must not ask (and pay) the model for nobody.
    if (own?.settled) throw afterSettled()
    const signal = own === undefined ? ctx.signal : own.signalSource()
    if (signal.aborted) throw abortReason(signal)
    env.budget.spend('model')
    // The start is read only for someone to tell: a log line, an event, a listener's scope.
    const facts = { link: linkOf(settings, ctx.model), attempt: ctx.attempt, started: observed(env) ? env.clock.now() : 0 }
    let response: ModelResponse
    try {
      // The attempt follows the context's signal: an outer layer's deadline or the run's cancellation.
      response = await askOnce(env, facts, ctx.request, signal)
      const fault = responseFault(response)
      if (fault !== undefined) throw new TypeError(`the model adapter returned ${fault}`)
    } catch (err) {
      // Told unless the call was cancelled: read as the layers left it (a deadline's layer has given its signal back).
      const now = own === undefined ? ctx.signal : own.signalSource()
      if (!now.aborted && !own?.settled) called(env, facts, undefined, err)
      throw err
    }
    // An attempt a layer left running (next() twice at once) that answers after the call settled: nobody reads it.
    if (own?.settled) throw afterSettled()
    ctx.response = response
    called(env, facts, response)
  }
}

/** What ends the run when a failure leaves the onion: a LoopError as it is, cancellation as the run's reason, else `model_failed`. */
function hardFailure(err: unknown, ctx: ModelContext, env: ModelCallEnv): unknown {
  if (readable(() => LoopError.is(err), false)) return err
  if (env.signal.aborted) return abortReason(env.signal)
  // Without a classifier layer the adapter's raw throw lands here: a throwing getter or a revoked proxy must
  // still end the run as the model's failure, not as a crash of the loop.
  const message = readable(() => (err instanceof Error ? err.message : String(err)), 'an error that could not be read')
  return new LoopError('model_failed', `the model call failed after ${ctx.attempt} attempt${ctx.attempt === 1 ? '' : 's'}: ${message}`, {
    cause: err,
    details: { model: ctx.model.name, attempts: ctx.attempt, failure: readable(() => describeModelFailure(err), message) },
  })
}

/** What `read` answers, or `otherwise` when reading a hostile value throws. */
function readable<T>(read: () => T, otherwise: T): T {
  try {
    return read()
  } catch {
    return otherwise
  }
}

/** The context of one model call: its `signal` is the run's, or a link an outer layer set, made real when read. */
class CallContext implements ModelContext {
  readonly turn: number
  attempt = 1
  response?: ModelResponse = undefined
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  readonly emit: (event: AgentEvent) => void
  /** Set once the onion settled: the terminal then refuses and `emit` drops, so nothing reaches the model or a listener after the call's outcome. */
  settled = false
  #signal: AbortSignal | SignalLink

  constructor(
    readonly run: RunContext,
    env: ModelCallEnv,
    public model: ModelInfo,
    public request: ModelCallRequest,
    readonly stackKey: object,
  ) {
    this.turn = env.turn
    this.log = env.log
    this.clock = env.clock
    this.random = env.random
    // Once the call settled, what a layer left running tells nothing: its run may have ended (a cancel, a usage error).
    // An own function, not a method, so a layer may call it unbound as before; none is made when nobody listens.
    const sink = env.emit
    this.emit =
      sink === noAgentEvents
        ? sink
        : (event) => {
            if (!this.settled) sink(event)
          }
    this.#signal = env.signal
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
}

/** Per agent: what every model call of its runs shares. */
export interface ModelOnionSettings {
  readonly onion: ModelOnion
  /** The agent's own model, which every call starts with. */
  readonly model: ModelLink
  /** What each model costs by name, for a model a layer asks instead of the agent's own. */
  readonly prices: ReadonlyMap<string, ModelPrice>
  readonly stackKey: object
}

/**
 * One model call through the agent's model onion: builds the context, runs the layers around one
 * attempt per `next()`, and answers with the response and the model that gave it.
 */
export async function callModelOnion(
  settings: ModelOnionSettings,
  request: ModelCallRequest,
  env: ModelCallEnv,
  run: RunContext,
): Promise<{ response: ModelResponse; link: ModelLink }> {
  const ctx = new CallContext(run, env, infoOf(settings.model), request, settings.stackKey)
  try {
    const onion = settings.onion(ctx, terminalOf(env, settings) as unknown as ModelNext)
    // The onion, or the run's cancellation if that comes first: a layer that hands the layers inside a signal of its
    // own that does not follow the run's would otherwise keep a cancelled run waiting for the model (and complete it
    // with the late answer). What the onion does after that is dropped (`settled`). A run already cancelled is left
    // to the onion, whose terminal refuses at once.
    const { signal } = env
    await (signal.aborted ? onion : untilAborted(onion, signal))
  } catch (err) {
    throw hardFailure(err, ctx, env)
  } finally {
    ctx.settled = true
  }
  const response = ctx.response
  if (typeof response !== 'object' || response === null) {
    throw new LoopError('model_failed', 'the model onion settled without a response: a model middleware returned without calling next()', {
      details: { model: ctx.model.name, fix: 'call `await next()` in every model middleware, or set ctx.response yourself' },
    })
  }
  // The terminal checked the model's own answer; this is one a layer set in its place.
  const fault = responseFault(response)
  if (fault !== undefined) {
    throw new LoopError(
      'model_failed',
      `the model onion settled with ${fault}: a model middleware set ctx.response to something no model answers`,
      {
        details: {
          model: ctx.model.name,
          fix: 'set ctx.response to a ModelResponse ({ text?: string, toolCalls?: ToolCall[] }), or leave it to next()',
        },
      },
    )
  }
  return { response, link: linkOf(settings, ctx.model) }
}
