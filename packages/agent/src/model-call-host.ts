import {
  abortReason,
  type Clock,
  compose,
  createRun,
  type Logger,
  LoopError,
  type ModelCallRequest,
  type ModelContext,
  type ModelEvent,
  type ModelInfo,
  type ModelMiddleware,
  type ModelNext,
  type ModelResponse,
  type ModelUsage,
  type RunContext,
  silentLogger,
  systemClock,
} from '@shallot/core'
import { neverAborted, type SignalLink, untilAborted } from '@shallot/core/kit'
import type { ModelPrice } from './model-link.js'
import { addUsage, NO_USAGE, type RunUsage, type UsageLimits, usageExhausted } from './usage-budget.js'

/** What a framework integration gives once, when it puts shallot's model layers in front of its model. */
export interface ModelCallHostOptions {
  /** The model layers, outermost first: the model sides of layer factories, e.g. `defaultModelMiddleware()`. */
  readonly modelMiddleware: readonly ModelMiddleware[]
  readonly clock?: Clock
  readonly random?: () => number
  readonly log?: Logger
  /** Receives `model.retry`, `model.fallback`, `model.circuit`. A throwing listener is logged, never rethrown. */
  readonly onEvent?: (event: ModelEvent) => void
  /**
   * Tokens and dollars each run (a call's `run`) may spend, counted as `createAgent({ limits })` counts them: a call
   * is refused once a limit is reached, and an answer that goes past one with tool calls ends the call.
   */
  readonly limits?: { readonly maxTokens?: number | undefined; readonly maxCostUsd?: number | undefined }
  /** What each model costs, by model name (the first or a spare), for `limits.maxCostUsd`. */
  readonly prices?: Readonly<Record<string, ModelPrice>>
}

/** One attempt of a hosted call, as `ask` gets it. */
export interface ModelAttempt {
  /** The model the layers settled on: the first, or a spare a fallback layer moved to. */
  readonly model: ModelInfo
  /**
   * Aborts at a layer's deadline or the caller's cancel. Made when first read, as the timeout layer's deadline is:
   * an attempt that never reads it costs no signal.
   */
  readonly signal: AbortSignal
  /** `request` as the layers left it (context editing shortens it). */
  readonly request: ModelCallRequest
}

/** One model call through the layers. */
export interface HostedModelCall<T> {
  /** The model asked first; a layer (fallback) may swap it for the layers inside. */
  readonly model: ModelInfo
  /** Asks the framework's model once; called again for each attempt a layer makes. */
  readonly ask: (attempt: ModelAttempt) => Promise<T>
  /** What layers that read the answer (usage budgets, stuck-loop) see of it. Default: no tool calls, no usage. */
  readonly responseOf?: ((answer: T) => ModelResponse) | undefined
  /** What layers that read or edit the request see. Default: empty. */
  readonly request?: ModelCallRequest | undefined
  /** The run the call belongs to: its id and state are shared with the run's other calls. Default: a run of its own. */
  readonly run?: RunContext | undefined
  /** The caller's cancellation. */
  readonly signal?: AbortSignal | undefined
  readonly turn?: number | undefined
}

/** Runs single model calls through one composed onion; layers key their state (a breaker per model) by it. */
export interface ModelCallHost {
  call<T>(call: HostedModelCall<T>): Promise<T>
  /**
   * Counts usage known only after the call returned (a stream's last part) into the run's `limits`, priced by
   * `model`; the next call of the run is refused once a limit is reached. Nothing to count without `limits`.
   */
  spend(run: RunContext, model: string, usage: ModelUsage | undefined): void
}

const noAnswer = Symbol('no answer')

/**
 * The model-call host the framework integrations share (AI SDK, OpenAI Agents, LangChain): the onion composed
 * once, a terminal that asks the framework's model and settles the moment the attempt's signal aborts, whether
 * or not the model listens (its late answer is dropped). A call ends with the answer, or throws
 * `LoopError('model_failed')` with the attempts, a `LoopError` a layer threw, or `LoopError('cancelled')`.
 *
 * @example
 * const host = modelCallHost({ modelMiddleware: defaultModelMiddleware() })
 * const text = await host.call({ model: { name: 'primary', adapter }, ask: ({ signal }) => fetchAnswer(signal) })
 */
export function modelCallHost(options: ModelCallHostOptions): ModelCallHost {
  const onion = compose<ModelContext>([...options.modelMiddleware])
  const clock = options.clock ?? systemClock
  const random = options.random ?? Math.random
  const log = options.log ?? silentLogger
  const emit = (event: ModelEvent) => {
    try {
      options.onEvent?.(event)
    } catch (error) {
      log.warn({ err: error, event: event.type }, 'a model event listener threw; the call goes on')
    }
  }
  const stackKey = {}
  const { limits, prices } = options
  const spent = new WeakMap<RunContext, RunUsage>()
  const usage = (run: RunContext) => spent.get(run) ?? NO_USAGE
  const priceOf = (model: string) => (prices !== undefined && Object.hasOwn(prices, model) ? prices[model] : undefined)
  const spend = (run: RunContext, model: string, used: ModelUsage | undefined) => {
    if (limits !== undefined && used !== undefined) spent.set(run, addUsage(usage(run), used, priceOf(model)))
  }

  async function call<T>(hosted: HostedModelCall<T>): Promise<T> {
    const signal = hosted.signal ?? neverAborted
    const run = hosted.run ?? createRun(signal === neverAborted ? {} : { signal })
    if (limits !== undefined) {
      const reached = usageExhausted(usage(run), limits, 'before')
      if (reached !== undefined) throw reached
    }
    let answer: T | typeof noAnswer = noAnswer
    async function last(ctx: HostContext): Promise<void> {
      answer = noAnswer
      // The attempt follows the signal the layers left (a deadline, the caller's cancel) and settles when it aborts,
      // whether or not the model listens: its late answer is dropped.
      const source = ctx.source()
      if (source.aborted) throw abortReason(source)
      const value = await untilAborted(hosted.ask(new Attempt(ctx.model, ctx.request, source)), source)
      answer = value
      ctx.response = hosted.responseOf?.(value) ?? { toolCalls: [] }
    }
    const ctx = new HostContext(
      { run, turn: hosted.turn ?? run.turn, log, clock, random, stackKey, emit },
      hosted.model,
      hosted.request ?? { messages: [], tools: [] },
      signal,
    )
    try {
      await onion(ctx, last as unknown as ModelNext)
    } catch (failure) {
      if (LoopError.is(failure)) throw failure
      if (signal.aborted) throw cancelled(signal)
      const message = failure instanceof Error ? failure.message : String(failure)
      const plural = ctx.attempt === 1 ? '' : 's'
      throw new LoopError('model_failed', `the model call failed after ${ctx.attempt} attempt${plural}: ${message}`, {
        cause: failure,
        details: { attempts: ctx.attempt, model: ctx.model.name },
      })
    }
    if (answer === noAnswer) {
      throw new LoopError('model_failed', 'the model onion settled without an answer: a model middleware returned without calling next()', {
        details: { model: hosted.model.name, fix: 'call `await next()` in every model middleware' },
      })
    }
    spend(run, ctx.model.name, ctx.response?.usage)
    // A final answer is in hand and costs nothing more; an answer that would go on past a limit is stopped.
    if (limits !== undefined && (ctx.response?.toolCalls?.length ?? 0) > 0) {
      const crossed = usageExhausted(usage(run), limits, 'spent') ?? unpriced(limits, ctx.model.name, ctx.response, priceOf)
      if (crossed !== undefined) throw crossed
    }
    return answer
  }
  return { call, spend }
}

/** A model without a price (a spare) would cost $0, and the cost budget would never stop the run. */
function unpriced(
  limits: UsageLimits,
  model: string,
  response: ModelResponse | undefined,
  priceOf: (model: string) => ModelPrice | undefined,
): LoopError | undefined {
  if (limits.maxCostUsd === undefined || response?.usage === undefined || priceOf(model) !== undefined) return undefined
  return new LoopError('budget_exhausted', `limits.maxCostUsd cannot count model '${model}': it has no price`, {
    details: { maxCostUsd: limits.maxCostUsd, model, fix: `add prices['${model}'] = { inputPerMTokUsd, outputPerMTokUsd }` },
  })
}

/** One attempt: its signal is the source the layers left, made real only when the model reads it. */
class Attempt implements ModelAttempt {
  readonly #source: AbortSignal | SignalLink

  constructor(
    readonly model: ModelInfo,
    readonly request: ModelCallRequest,
    source: AbortSignal | SignalLink,
  ) {
    this.#source = source
  }

  get signal(): AbortSignal {
    const source = this.#source
    return source instanceof AbortSignal ? source : source.signal
  }
}

/** What every call of one host shares. */
interface Shared {
  readonly run: RunContext
  readonly turn: number
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  readonly stackKey: object
  readonly emit: (event: ModelEvent) => void
}

/**
 * The context of one hosted call. Its signal is the caller's (or a layer's deferred deadline), made real only when
 * read, so a deadline that passes unread costs no signal of its own.
 */
class HostContext implements ModelContext {
  readonly run: RunContext
  readonly turn: number
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  readonly stackKey: object
  readonly emit: (event: ModelEvent) => void
  attempt = 1
  response?: ModelResponse = undefined
  #current: AbortSignal | SignalLink

  constructor(
    shared: Shared,
    public model: ModelInfo,
    public request: ModelCallRequest,
    signal: AbortSignal,
  ) {
    this.run = shared.run
    this.turn = shared.turn
    this.log = shared.log
    this.clock = shared.clock
    this.random = shared.random
    this.stackKey = shared.stackKey
    this.emit = shared.emit
    this.#current = signal
  }

  get signal(): AbortSignal {
    const current = this.#current
    return current instanceof AbortSignal ? current : current.signal
  }

  set signal(value: AbortSignal | SignalLink) {
    this.#current = value
  }

  /** The signal the layers left, a link not made real. */
  source(): AbortSignal | SignalLink {
    return this.#current
  }
}

function cancelled(signal: AbortSignal): LoopError {
  const reason: unknown = signal.reason
  return LoopError.is(reason) ? reason : new LoopError('cancelled', 'the call was cancelled', { cause: reason })
}
