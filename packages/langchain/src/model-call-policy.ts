import {
  abortReason,
  type Clock,
  compose,
  createRun,
  type Logger,
  LoopError,
  type ModelAdapter,
  type ModelContext,
  type ModelMiddleware,
  type ModelNext,
  type RunContext,
  ToolError,
} from '@shallot/core'
import type { SignalLink } from '@shallot/core/kit'
import { defaultModelMiddleware } from 'shallot'

/** The default model stack's first backoff, used only to keep a base under a smaller `modelCall.capMs`. */
const DEFAULT_BASE_MS = 250

/** `modelCall`: the deadline of each attempt, and the retry options of the default model stack, as given. */
export interface ModelCallPolicy {
  /** Deadline of one attempt; the request is aborted when it passes. */
  timeoutMs: number
  /** Attempts per model call, counting the first. */
  maxAttempts?: number | undefined
  /** Full-jitter exponential backoff between attempts: base and cap, in ms. */
  baseMs?: number | undefined
  capMs?: number | undefined
  /** The longest `Retry-After` honoured; a server asking for more is not waited for. */
  maxRetryAfterMs?: number | undefined
}

/**
 * The default model stack, `defaultModelMiddleware()` from `shallot` (a breaker per model, retry, the error
 * classifier), as `createAgent({ modelMiddleware: defaultModelMiddleware() })` lists it, with `modelCall`'s retry
 * fields given to its retry layer. Its timeout layer is left out: the terminal below puts `modelCall.timeoutMs` on
 * each attempt, with or without `modelMiddleware`.
 */
export function modelCallLayers({ maxAttempts, baseMs, capMs, maxRetryAfterMs }: ModelCallPolicy): ModelMiddleware[] {
  const retry: Record<string, number> = {}
  if (maxAttempts !== undefined) retry.maxAttempts = maxAttempts
  if (maxRetryAfterMs !== undefined) retry.maxRetryAfterMs = maxRetryAfterMs
  if (capMs !== undefined) retry.capMs = capMs
  // modelCall allows a base above the cap (the cap wins); the retry layer asks base ≤ cap.
  if (baseMs !== undefined || capMs !== undefined) retry.baseMs = Math.min(baseMs ?? DEFAULT_BASE_MS, capMs ?? Number.POSITIVE_INFINITY)
  return defaultModelMiddleware({ retry, timeout: false })
}

/** Where LangChain's model sits in the onion's context: LangChain asks it, the terminal below never calls this. */
const LANGCHAIN_ADAPTER: ModelAdapter = {
  generate: () => Promise.reject(new Error('a LangChain model is asked through its handler, not through ctx.model.adapter')),
}

/** What one model call through the onion needs from `shallotMiddleware`. */
export interface OnionCallEnv {
  readonly onion: (ctx: ModelContext, last: ModelNext) => Promise<void>
  readonly timeoutMs: number
  readonly clock: Clock
  readonly random: () => number
  readonly log: Logger
  /** The thread's run (its id and state); the model call spends none of its steps. */
  readonly run: RunContext
  readonly model: string
  /** The caller's cancellation (`agent.invoke(input, { signal })`). */
  readonly parent: AbortSignal | undefined
}

const noop = () => {}
const never = new AbortController().signal
const plural = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`

/** Composes the model layers once per middleware. */
export const composeModelLayers = (layers: readonly ModelMiddleware[]) => compose(layers)

/**
 * Runs `attempt(signal)` as the terminal of the model onion: each attempt gets a signal that aborts at its
 * deadline (`timeoutMs`, a transient `ToolError('timeout')`) or when `parent` aborts, and the layers (retry,
 * the classifier, your own) decide what is repeated. Ends as `LoopError('model_failed')` with the attempts, a
 * `LoopError` as it is, or the abort reason of `parent` when the caller cancels.
 */
export async function callThroughOnion<T>(attempt: (signal: AbortSignal) => Promise<T>, env: OnionCallEnv): Promise<T> {
  const { clock, parent, timeoutMs } = env
  const signal = parent ?? never
  // The model call's own run view: the thread's id and state, the caller's signal, and a budget no model call spends.
  const run = createRun({ id: env.run.id, signal, state: env.run.state, turn: env.run.turn })
  let answer: { value: T } | undefined
  async function askOnce(ctx: ModelContext): Promise<void> {
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    if (ctx.model.adapter !== LANGCHAIN_ADAPTER) {
      throw new TypeError(
        `a model layer asked for model "${ctx.model.name}" instead of the agent's: under LangChain the agent's model is the one asked; put LangChain's modelFallbackMiddleware outside shallotMiddleware for a chain`,
      )
    }
    const controller = new AbortController()
    const outer = ctx.signal
    const onAbort = () => controller.abort(outer.reason)
    outer.addEventListener('abort', onAbort, { once: true })
    const timer = new AbortController()
    const deadline = clock.sleep(timeoutMs, timer.signal).then(() => {
      const error = new ToolError('timeout', `the model did not answer within ${timeoutMs} ms`, { category: 'transient' })
      controller.abort(error)
      throw error
    }, noop) as Promise<never>
    try {
      answer = { value: await Promise.race([attempt(controller.signal), deadline]) }
      ctx.response = { toolCalls: [] }
    } catch (error) {
      throw ToolError.is(controller.signal.reason) ? controller.signal.reason : error
    } finally {
      timer.abort()
      outer.removeEventListener('abort', onAbort)
    }
  }
  // A layer may hand the layers inside a link of its own (a deadline): its signal is what they read.
  let current: AbortSignal | SignalLink = signal
  const ctx: ModelContext = {
    run,
    turn: env.run.turn,
    model: { name: env.model, adapter: LANGCHAIN_ADAPTER },
    request: { messages: [], tools: [] },
    get signal() {
      return current instanceof AbortSignal ? current : current.signal
    },
    set signal(value) {
      current = value
    },
    attempt: 1,
    log: env.log,
    clock,
    random: env.random,
    stackKey: env.onion,
    emit: noop,
  }
  try {
    await env.onion(ctx, askOnce as unknown as ModelNext)
  } catch (failure) {
    if (LoopError.is(failure)) throw failure
    if (parent?.aborted) throw cancelled(parent)
    const message = failure instanceof Error ? failure.message : String(failure)
    throw new LoopError('model_failed', `the model call failed after ${plural(ctx.attempt)}: ${message}`, {
      cause: failure,
      details: { attempts: ctx.attempt, model: env.model },
    })
  }
  if (answer === undefined) {
    throw new LoopError('model_failed', 'the model onion settled without an answer: a model middleware returned without calling next()', {
      details: { model: env.model, fix: 'call `await next()` in every model middleware' },
    })
  }
  return answer.value
}

function cancelled(parent: AbortSignal): LoopError {
  const reason: unknown = parent.reason
  return LoopError.is(reason) ? reason : new LoopError('cancelled', 'the run was cancelled', { cause: reason })
}
