import type { SignalLink } from './cancellation.js'
import type { Message, ModelAdapter, ModelResponse, ModelTool } from './model.js'
import type { ModelEvent } from './model-events.js'
import type { Clock, Logger, RunContext } from './types.js'

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
  /**
   * The run's cancellation, and whatever an outer layer added (a deadline). As on a tool call, a layer
   * may hand the layers inside a signal of its own, a real one or a `SignalLink`, and gives the old
   * one back when it is done; a host's context reads a link's `signal` when `signal` is read.
   */
  get signal(): AbortSignal
  set signal(value: AbortSignal | SignalLink)
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
