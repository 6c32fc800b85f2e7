import type { Message, ModelAdapter, ModelResponse, ModelTool } from './model.js'
import type { ModelEvent } from './model-events.js'
import type { Clock, DeferredSignal, Logger, RunContext } from './types.js'

/** The model a call is asking. A layer (fallback) may swap it for the layers inside it. */
export interface ModelInfo {
  /** How reports, events and prices name it. */
  readonly name: string
  readonly provider?: string
  readonly adapter: ModelAdapter
}

/** What the model is asked: the request without its signal (the context carries that). */
export interface ModelCallRequest {
  readonly messages: readonly Message[]
  readonly tools: readonly ModelTool[]
  readonly system?: string
}

/**
 * The one shared object of a model call's onion, as `ToolContext` is of a tool call's. Layers may
 * replace `model` (fallback), `request` (trimming, a system note) and `signal` (a deadline) for the
 * layers inside them; the terminal sets `response`. Layers add typed fields by declaration merging.
 */
export interface ModelContext {
  readonly run: RunContext
  /** The turn this call asks for, 1-based. */
  readonly turn: number
  model: ModelInfo
  request: ModelCallRequest
  /** The run's cancellation, and whatever deadline an outer layer set (made real when read). */
  signal: AbortSignal
  /**
   * Optional seam (createAgent's contexts have it; a host that builds its own may not): hands the
   * inner layers a signal without creating it, as `ToolContext.deferSignal` does. The timeout layer
   * gives its deadline this way, so a model call whose adapter never reads its signal makes none.
   */
  deferSignal?(deferred: DeferredSignal | AbortSignal): void
  /** The signal as it stands, without creating a deferred one (with {@link deferSignal}). */
  currentSignal?(): AbortSignal | DeferredSignal
  /** 1-based, bumped by a layer that repeats the call (retry). */
  attempt: number
  response?: ModelResponse
  readonly log: Logger
  readonly clock: Clock
  readonly random: () => number
  /** What layers key per-agent state by: one object per agent's model onion, standing for nothing else. */
  readonly stackKey: object
  /** Hands an agent event (`model.retry`, `model.fallback`, `model.circuit`) to the agent's listener. */
  emit(event: ModelEvent): void
}

/** The inner layers of a model call, as seen from one layer. May be called again once the previous call settled. */
export type ModelNext = () => Promise<void>

/**
 * One layer of the model-call onion: first in a list is outermost; it calls `next()` to ask the
 * inner layers (and at the end, the model once), and reads `ctx.response` after it. Failures are
 * thrown: a `LoopError` ends the run as it is, anything else ends it as `model_failed`.
 *
 * @example
 * const timing: ModelMiddleware = async function timing(ctx, next) {
 *   const started = ctx.clock.now()
 *   try { await next() } finally { ctx.log.info({ model: ctx.model.name, ms: ctx.clock.now() - started }, 'asked') }
 * }
 */
export type ModelMiddleware = (ctx: ModelContext, next: ModelNext) => Promise<void>
