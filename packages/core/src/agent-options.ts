import { z } from 'zod'
import type { AgentEventListener } from './agent-events.js'
import type { AgentLimits } from './agent-limits.js'
import { type CheckpointSeal, checkpointKeyBytes, checkpointSeal, MIN_CHECKPOINT_KEY_BYTES } from './checkpoint-seal.js'
import type { CheckpointStore } from './checkpoints.js'
import { guardLogger } from './logger.js'
import type { ModelAdapter } from './model.js'
import type { ModelBreakerOptions } from './model-breaker.js'
import type { ModelRetry } from './model-call.js'
import { type ModelLink, type ModelPrice, modelChain } from './model-chain.js'
import { composeModel, type ModelMiddleware } from './model-context.js'
import type { ModelOnionSettings } from './model-onion.js'
import { OptionsError, parseOptions } from './options.js'
import { DEFAULT_MAX_PARK_MS, type ParkSettings } from './park.js'
import { createStack, type Stack, type StackOptions } from './stack.js'
import type { Clock, Logger, Middleware } from './types.js'

export type { AgentLimits } from './agent-limits.js'

/** A model, or a fallback chain of them. */
export type AgentModel = ModelAdapter | readonly ModelAdapter[]

/**
 * `createAgent`'s options. `Model` defaults to one adapter, so code that wraps `options.model`
 * (recorders, instrumentation) keeps a single adapter to wrap; a chain's options are
 * `AgentOptions<AgentModel>` (or `AgentOptions<readonly ModelAdapter[]>`).
 */
export interface AgentOptions<Model extends AgentModel = ModelAdapter> {
  /**
   * The model, or a fallback chain of them, primary first: a model whose calls keep failing opens
   * its circuit and is skipped until a probe succeeds; the run ends as `fallback_exhausted` when
   * none can answer. A model's `name` keys `prices` and names it in reports and events.
   */
  model: Model
  /** The system prompt (instructions), sent with every model call. */
  system?: string
  /** What each model costs, by model name, for `limits.maxCostUsd` (which needs a price for every model). */
  prices?: Readonly<Record<string, ModelPrice>>
  /**
   * Called with each event of every run: started and finished, each model attempt, a retry, a
   * fallback to the next model, a circuit change. Its optional `within` runs each run and model
   * attempt in the listener's context (see {@link AgentEventListener}).
   */
  onEvent?: AgentEventListener
  /** The breaker of each model of a chain. Default: open after 3 failed attempts in a row, for 30 s. */
  modelBreaker?: Partial<ModelBreakerOptions>
  /** Either a ready stack, or the tools (and optionally middleware) to build one. */
  stack?: Stack
  tools?: StackOptions['tools']
  middleware?: Middleware | readonly Middleware[]
  limits?: Partial<AgentLimits>
  logger?: Logger
  clock?: Clock
  random?: () => number
  checkpoints?: CheckpointStore
  /**
   * A secret of at least 32 bytes: every checkpoint is saved with an HMAC over its contents, and
   * `resume` refuses one without this key's digest (`ResumeError('corrupt_checkpoint')`, nothing
   * run), so whoever can write to the store cannot plant a call, an approval or a state the run
   * never had. Without it the store is trusted as the agent's own memory. Needs `checkpoints`.
   */
  checkpointKey?: string | Uint8Array
  /**
   * Parks a run instead of holding the worker while a tool call must wait at least `afterMs` (a
   * long `Retry-After` the retry layer would not wait out, an open circuit's cooldown): the turn is
   * checkpointed with `wakeAt` and the outcome is `{ status: 'parked', runId, wakeAt, reason }`;
   * `agent.resume(runId)` after `wakeAt` redoes only the waiting calls. Needs `checkpoints`.
   * `maxWaitMs` (default one day) is the longest park; `wallNow` the wall clock (default `Date.now`).
   */
  park?: { afterMs: number; maxWaitMs?: number; wallNow?: () => number }
  /**
   * Whether a soft error of category `fatal` / `user` ends the run. Default: both do. It is the
   * stack's policy (`createStack({ escalate })`), passed to the stack this agent builds; with a ready
   * `stack`, set it there.
   */
  escalate?: { fatal?: boolean; user?: boolean }
  /**
   * Retries of a failing model call, on each model. Default 3 attempts, full jitter from 250 ms,
   * capped at 4 s, above the provider's `Retry-After`, which is waited for up to 60 s.
   */
  modelRetry?: Partial<ModelRetry>
  /**
   * The model call's onion, outermost first: each layer wraps every model call as tool middleware
   * wraps every tool call, and the innermost `next()` asks the model once. With it, the agent's own
   * retry and breaker of model calls are off: the layers given here decide (decision 500).
   */
  modelMiddleware?: ModelMiddleware | readonly ModelMiddleware[]
}

const DEFAULT_LIMITS: AgentLimits = { maxTurns: 20, maxSteps: 100, modelTimeoutMs: 60_000, maxParallelToolCalls: 4 }
const DEFAULT_MODEL_RETRY: ModelRetry = { maxAttempts: 3, baseMs: 250, capMs: 4000, maxRetryAfterMs: 60_000 }
const DEFAULT_BREAKER: ModelBreakerOptions = { threshold: 3, cooldownMs: 30_000 }

const tokens = z
  .number({ error: 'must be a whole number of tokens > 0, e.g. 200000 (leave it out for no token budget)' })
  .int({ error: 'must be a whole number of tokens > 0, e.g. 200000' })
  .positive({ error: 'must be a whole number of tokens > 0, e.g. 200000' })
const dollars = z
  .number({ error: 'must be a finite number of US dollars > 0, e.g. 2.5 (leave it out for no cost budget)' })
  .positive({ error: 'must be a finite number of US dollars > 0, e.g. 2.5' })

// A JavaScript timer holds at most 2^31 − 1 ms (about 24.8 days); a longer one fires at once.
const MAX_TIMER_MS = 2_147_483_647
const timerMs = (what: string) =>
  z.number().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS} ms (about 24.8 days): a longer ${what} would fire at once` })

const agentOptionsSchema = z.object({
  limits: z
    .strictObject({
      maxTurns: z.number().int().positive().default(DEFAULT_LIMITS.maxTurns),
      maxSteps: z.number().int().positive().default(DEFAULT_LIMITS.maxSteps),
      modelTimeoutMs: timerMs('deadline').positive().default(DEFAULT_LIMITS.modelTimeoutMs),
      maxParallelToolCalls: z.number().int().positive().default(DEFAULT_LIMITS.maxParallelToolCalls),
      maxTokens: tokens.optional(),
      maxCostUsd: dollars.optional(),
    })
    .default(DEFAULT_LIMITS),
  modelRetry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(10).default(DEFAULT_MODEL_RETRY.maxAttempts),
      baseMs: z.number().nonnegative().default(DEFAULT_MODEL_RETRY.baseMs),
      capMs: timerMs('backoff').nonnegative().default(DEFAULT_MODEL_RETRY.capMs),
      maxRetryAfterMs: timerMs('wait').nonnegative().default(DEFAULT_MODEL_RETRY.maxRetryAfterMs),
    })
    .default(DEFAULT_MODEL_RETRY),
  modelBreaker: z
    .strictObject({
      threshold: z.number().int().min(1).max(1000).default(DEFAULT_BREAKER.threshold),
      cooldownMs: z.number().nonnegative().default(DEFAULT_BREAKER.cooldownMs),
    })
    .default(DEFAULT_BREAKER),
  system: z.string({ error: 'must be a string (the system prompt)' }).optional(),
  park: z
    .strictObject({
      afterMs: z
        .number({ error: 'must be a number of ms, e.g. 5000: a wait at least this long parks the run' })
        .positive({ error: 'must be a number of ms > 0, e.g. 5000' })
        .max(DEFAULT_MAX_PARK_MS * 365, { error: 'must be a finite number of ms, e.g. 5000' }),
      maxWaitMs: z
        .number({ error: 'must be a number of ms, e.g. 3600000 (one hour)' })
        .positive({ error: 'must be a number of ms > 0' })
        .max(DEFAULT_MAX_PARK_MS * 365, { error: 'must be at most a year of ms' })
        .default(DEFAULT_MAX_PARK_MS),
      wallNow: z
        .custom<() => number>((v) => typeof v === 'function', 'must be a function () => number returning wall-clock epoch ms')
        .optional(),
    })
    .refine((p) => p.afterMs <= p.maxWaitMs, { message: 'afterMs must not exceed maxWaitMs', path: ['afterMs'] })
    .optional(),
})

/** What the loop runs with, every option checked and defaulted. */
export interface AgentSettings {
  /** The fallback chain, primary first; one link for a single model. */
  readonly chain: readonly ModelLink[]
  readonly system: string | undefined
  readonly modelBreaker: ModelBreakerOptions
  readonly stack: Stack
  readonly limits: AgentLimits
  readonly modelRetry: ModelRetry
  readonly clock: Clock
  readonly random: () => number
  readonly logger: Logger
  readonly checkpoints: CheckpointStore | undefined
  /** Seals every checkpoint saved and checks every one resumed; undefined without `checkpointKey`. */
  readonly seal: CheckpointSeal | undefined
  /** Undefined: no run parks. */
  readonly park: ParkSettings | undefined
  readonly onEvent: AgentEventListener | undefined
  /** The model onion; undefined: the agent's own retry, breaker and chain ask the model. */
  readonly modelOnion: ModelOnionSettings | undefined
}

/** Checks `modelMiddleware` and composes it; undefined when none was given. */
function modelOnionOf(given: unknown, chain: readonly ModelLink[], prices: AgentOptions['prices']): ModelOnionSettings | undefined {
  if (given === undefined) return undefined
  const list = typeof given === 'function' ? [given] : given
  const fix = 'pass a model middleware (ctx, next) => Promise<void>, or an array of them, outermost first'
  if (!Array.isArray(list))
    throw new OptionsError('createAgent()', [{ path: 'modelMiddleware', message: `must be a function or an array; ${fix}` }])
  const bad = list.findIndex((layer) => typeof layer !== 'function')
  if (bad >= 0) {
    throw new OptionsError('createAgent()', [
      { path: `modelMiddleware.${bad}`, message: `must be a function, got ${list[bad] === null ? 'null' : typeof list[bad]}; ${fix}` },
    ])
  }
  if (chain.length > 1) {
    throw new OptionsError('createAgent()', [
      {
        path: 'modelMiddleware',
        message:
          'cannot be combined with a model chain `model: [a, b]`; pass `model: a` and list the spare models in the fallback layer: `modelMiddleware: [fallbackModel({ models: [b] }), …]` from @shallot/fallback',
      },
    ])
  }
  // Checked by modelChain: a plain object of prices, without reserved names.
  const table = new Map(Object.entries(prices ?? {}))
  return { onion: composeModel(list as ModelMiddleware[]), chain, prices: table, stackKey: Object.freeze({}) }
}

/** The seal of `checkpointKey`, checked: never echoed in an error, since it is a secret. */
function checkpointSealOf(key: unknown, checkpoints: CheckpointStore | undefined): CheckpointSeal | undefined {
  if (key === undefined) return undefined
  const bytes = checkpointKeyBytes(key)
  if (bytes === undefined) {
    throw new OptionsError('createAgent()', [
      {
        path: 'checkpointKey',
        message: `must be a secret of at least ${MIN_CHECKPOINT_KEY_BYTES} bytes (a string or a Uint8Array), e.g. 32 random bytes from your secret store`,
      },
    ])
  }
  if (checkpoints === undefined) {
    throw new OptionsError('createAgent()', [
      {
        path: 'checkpointKey',
        message: 'needs a checkpoints store whose checkpoints it seals; pass createAgent({ checkpoints, checkpointKey })',
      },
    ])
  }
  return checkpointSeal(bytes)
}

/** Checks `createAgent`'s options and builds the stack when the caller gave tools instead of one. */
export function agentSettings(options: AgentOptions<AgentModel>): AgentSettings {
  if (typeof options !== 'object' || options === null) throw new TypeError('createAgent() takes an options object { model, tools }')
  const { limits, modelRetry, modelBreaker, system, park } = parseOptions('createAgent()', agentOptionsSchema, {
    limits: options.limits,
    modelRetry: options.modelRetry,
    modelBreaker: options.modelBreaker,
    system: options.system,
    park: options.park,
  })
  const checkpoints = options.checkpoints
  if (checkpoints !== undefined && (typeof checkpoints?.save !== 'function' || typeof checkpoints?.load !== 'function')) {
    throw new OptionsError('createAgent()', [
      { path: 'checkpoints', message: 'must be a checkpoint store { save(snapshot), load(runId) }, e.g. memoryCheckpoints()' },
    ])
  }
  const seal = checkpointSealOf(options.checkpointKey, checkpoints)
  if (park !== undefined && checkpoints === undefined) {
    // A parked run lives only in its checkpoint: without a store it could never wake.
    throw new OptionsError('createAgent()', [
      { path: 'park', message: 'needs a checkpoints store to park runs in; pass createAgent({ checkpoints, park })' },
    ])
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new OptionsError('createAgent()', [{ path: 'onEvent', message: 'must be a function (event) => void' }])
  }
  const within = (options.onEvent as { within?: unknown } | undefined)?.within
  if (within !== undefined && typeof within !== 'function') {
    throw new OptionsError('createAgent()', [{ path: 'onEvent.within', message: 'must be a function (scope, fn) => fn()' }])
  }
  const chain = modelChain(options.model, options.prices, limits.maxCostUsd !== undefined, options.modelMiddleware !== undefined)
  if (options.stack === undefined && options.tools === undefined) throw new TypeError('createAgent(): pass either stack or tools')
  if (options.stack !== undefined && options.escalate !== undefined) {
    // Silently ignoring it would leave a run going on that the caller asked to stop.
    throw new OptionsError('createAgent()', [
      { path: 'escalate', message: 'belongs to the stack; with `stack`, pass it to createStack({ escalate })' },
    ])
  }
  const stack =
    options.stack ??
    createStack({
      tools: options.tools ?? [],
      ...(options.middleware === undefined ? {} : { middleware: options.middleware }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.escalate === undefined ? {} : { escalate: options.escalate }),
    })
  return {
    chain,
    system,
    modelBreaker,
    stack,
    limits,
    modelRetry,
    clock: options.clock ?? stack.clock,
    random: options.random ?? stack.random,
    logger: guardLogger(options.logger ?? stack.logger),
    checkpoints,
    seal,
    park: park === undefined ? undefined : { afterMs: park.afterMs, maxWaitMs: park.maxWaitMs, wallNow: park.wallNow ?? Date.now },
    onEvent: options.onEvent,
    modelOnion: modelOnionOf(options.modelMiddleware, chain, options.prices),
  }
}
