import {
  type Clock,
  compose,
  createStack,
  type LayerEntry,
  type Logger,
  type ModelAdapter,
  type ModelMiddleware,
  modelSideOf,
  OptionsError,
  parseOptions,
  type Stack,
  type StackOptions,
} from '@shallot/core'
import { closest, guardLogger } from '@shallot/core/kit'
import { z } from 'zod'
import type { AgentEventListener } from './agent-events.js'
import type { AgentLimits } from './agent-limits.js'
import { type CheckpointSeal, checkpointKeyBytes, checkpointSeal, MIN_CHECKPOINT_KEY_BYTES } from './checkpoint-seal.js'
import type { CheckpointStore } from './checkpoints.js'
import { type ModelLink, type ModelPrice, modelLink } from './model-link.js'
import type { ModelOnionSettings } from './model-onion.js'
import { DEFAULT_MAX_PARK_MS, type ParkSettings } from './park.js'

export type { AgentLimits } from './agent-limits.js'

/**
 * `createAgent`'s options. Every one of them is honoured as typed; any other key is refused with an
 * `OptionsError`, so a misspelt `modelMiddleware` cannot leave a run's model calls bare unnoticed.
 */
export interface AgentOptions {
  /**
   * The model: one adapter. Its `name` keys `prices` and names it in reports and events. A spare
   * model is a layer: list `fallback({ models: [spare] })` from `@shallot/fallback` in `modelMiddleware`.
   */
  model: ModelAdapter
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
  /** Either a ready stack, or the tools (and optionally middleware) to build one. */
  stack?: Stack
  tools?: StackOptions['tools']
  middleware?: StackOptions['middleware']
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
   * The model call's onion, outermost first: each layer wraps every model call as tool middleware
   * wraps every tool call, and the innermost `next()` asks the model once. Without it the agent asks
   * its model once per call, with no retry and no deadline; `defaultModelMiddleware()` from `shallot`
   * is the recommended stack (breaker, retry, error classifier, a deadline per attempt).
   */
  modelMiddleware?: LayerEntry<ModelMiddleware> | readonly LayerEntry<ModelMiddleware>[]
}

const DEFAULT_LIMITS: AgentLimits = { maxTurns: 20, maxSteps: 100, maxParallelToolCalls: 4 }

const tokens = z
  .number({ error: 'must be a whole number of tokens > 0, e.g. 200000 (leave it out for no token budget)' })
  .int({ error: 'must be a whole number of tokens > 0, e.g. 200000' })
  .positive({ error: 'must be a whole number of tokens > 0, e.g. 200000' })
const dollars = z
  .number({ error: 'must be a finite number of US dollars > 0, e.g. 2.5 (leave it out for no cost budget)' })
  .positive({ error: 'must be a finite number of US dollars > 0, e.g. 2.5' })

const agentOptionsSchema = z.object({
  limits: z
    .strictObject({
      maxTurns: z.number().int().positive().default(DEFAULT_LIMITS.maxTurns),
      maxSteps: z.number().int().positive().default(DEFAULT_LIMITS.maxSteps),
      maxParallelToolCalls: z.number().int().positive().default(DEFAULT_LIMITS.maxParallelToolCalls),
      maxTokens: tokens.optional(),
      maxCostUsd: dollars.optional(),
    })
    .default(DEFAULT_LIMITS),
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
  /** The agent's model, named and priced. */
  readonly model: ModelLink
  readonly system: string | undefined
  readonly stack: Stack
  readonly limits: AgentLimits
  readonly clock: Clock
  readonly random: () => number
  readonly logger: Logger
  readonly checkpoints: CheckpointStore | undefined
  /** Seals every checkpoint saved and checks every one resumed; undefined without `checkpointKey`. */
  readonly seal: CheckpointSeal | undefined
  /** Undefined: no run parks. */
  readonly park: ParkSettings | undefined
  readonly onEvent: AgentEventListener | undefined
  /** The model onion: the given layers around one attempt (only the attempt without `modelMiddleware`). */
  readonly modelOnion: ModelOnionSettings
}

/** The refusal of one option of `createAgent()`, at `path`. */
const refused = (path: string, message: string) => new OptionsError('createAgent()', [{ path, message }])

/** Checks `modelMiddleware` and composes it; without it, the onion is the one attempt. */
function modelOnionOf(given: unknown, model: ModelLink, prices: ReadonlyMap<string, ModelPrice>): ModelOnionSettings {
  const list: readonly unknown[] = given === undefined ? [] : Array.isArray(given) ? given : [given]
  const layers = list.map((entry, i) => {
    try {
      return modelSideOf(entry, Array.isArray(given) ? `modelMiddleware[${i}]` : 'modelMiddleware')
    } catch (err) {
      const path = Array.isArray(given) ? `modelMiddleware.${i}` : 'modelMiddleware'
      throw refused(path, (err as Error).message.replace(/^[^:]*: /, ''))
    }
  })
  return { onion: compose(layers), model, prices, stackKey: Object.freeze({}) }
}

/** The keys `AgentOptions` declares: anything else is refused rather than silently ignored. */
const KNOWN: readonly (keyof AgentOptions)[] = [
  'model',
  'system',
  'prices',
  'onEvent',
  'stack',
  'tools',
  'middleware',
  'limits',
  'logger',
  'clock',
  'random',
  'checkpoints',
  'checkpointKey',
  'park',
  'escalate',
  'modelMiddleware',
]

/** Options an agent once took for its model calls, each now a layer of `modelMiddleware`: the layer to list. */
const MOVED_TO_LAYERS: Readonly<Record<string, string>> = {
  modelRetry:
    'list retry({ maxAttempts: 3 }) from @shallot/retry in modelMiddleware, or defaultModelMiddleware({ retry: { … } }) from shallot',
  modelBreaker:
    'list circuitBreaker({ policy: consecutive({ threshold: 3 }) }) from @shallot/circuit-breaker in modelMiddleware, or defaultModelMiddleware({ circuitBreaker: { … } }) from shallot',
  modelTimeoutMs:
    'list timeout({ ms: 60_000 }) from @shallot/timeout in modelMiddleware, or defaultModelMiddleware({ timeout: { ms } }) from shallot',
}

function refuseUnknown(options: object): void {
  const limits = (options as { limits?: unknown }).limits
  if (typeof limits === 'object' && limits !== null && 'modelTimeoutMs' in limits) {
    throw refused('limits', `unknown option "modelTimeoutMs"; ${MOVED_TO_LAYERS.modelTimeoutMs}`)
  }
  for (const key of Object.keys(options)) {
    if ((KNOWN as readonly string[]).includes(key)) continue
    const moved = Object.hasOwn(MOVED_TO_LAYERS, key) ? MOVED_TO_LAYERS[key] : undefined
    const guess = moved === undefined ? closest(key, KNOWN) : undefined
    const fix = moved ?? (guess === undefined ? `known options: ${KNOWN.join(', ')}` : `did you mean '${guess}'?`)
    throw refused('', `unknown option "${key}"; ${fix}`)
  }
}

/** The seal of `checkpointKey`, checked: never echoed in an error, since it is a secret. */
function checkpointSealOf(key: unknown, checkpoints: CheckpointStore | undefined): CheckpointSeal | undefined {
  if (key === undefined) return undefined
  const bytes = checkpointKeyBytes(key)
  if (bytes === undefined) {
    throw refused(
      'checkpointKey',
      `must be a secret of at least ${MIN_CHECKPOINT_KEY_BYTES} bytes (a string or a Uint8Array), e.g. 32 random bytes from your secret store`,
    )
  }
  if (checkpoints === undefined) {
    throw refused('checkpointKey', 'needs a checkpoints store whose checkpoints it seals; pass createAgent({ checkpoints, checkpointKey })')
  }
  return checkpointSeal(bytes)
}

/** Checks `createAgent`'s options and builds the stack when the caller gave tools instead of one. */
export function agentSettings(options: AgentOptions): AgentSettings {
  if (typeof options !== 'object' || options === null) throw new TypeError('createAgent() takes an options object { model, tools }')
  refuseUnknown(options)
  const { limits, system, park } = parseOptions('createAgent()', agentOptionsSchema, {
    limits: options.limits,
    system: options.system,
    park: options.park,
  })
  const checkpoints = options.checkpoints
  if (checkpoints !== undefined && (typeof checkpoints?.save !== 'function' || typeof checkpoints?.load !== 'function')) {
    throw refused('checkpoints', 'must be a checkpoint store { save(snapshot), load(runId) }, e.g. memoryCheckpoints()')
  }
  const seal = checkpointSealOf(options.checkpointKey, checkpoints)
  if (park !== undefined && checkpoints === undefined) {
    // A parked run lives only in its checkpoint: without a store it could never wake.
    throw refused('park', 'needs a checkpoints store to park runs in; pass createAgent({ checkpoints, park })')
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw refused('onEvent', 'must be a function (event) => void')
  }
  const within = (options.onEvent as { within?: unknown } | undefined)?.within
  if (within !== undefined && typeof within !== 'function') {
    throw refused('onEvent.within', 'must be a function (scope, fn) => fn()')
  }
  const { link, prices } = modelLink(options.model, options.prices, limits.maxCostUsd !== undefined, options.modelMiddleware !== undefined)
  if (options.stack === undefined && options.tools === undefined) throw new TypeError('createAgent(): pass either stack or tools')
  if (options.stack !== undefined && options.escalate !== undefined) {
    // Silently ignoring it would leave a run going on that the caller asked to stop.
    throw refused('escalate', 'belongs to the stack; with `stack`, pass it to createStack({ escalate })')
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
    model: link,
    system,
    stack,
    limits,
    clock: options.clock ?? stack.clock,
    random: options.random ?? stack.random,
    logger: guardLogger(options.logger ?? stack.logger),
    checkpoints,
    seal,
    park: park === undefined ? undefined : { afterMs: park.afterMs, maxWaitMs: park.maxWaitMs, wallNow: park.wallNow ?? Date.now },
    onEvent: options.onEvent,
    modelOnion: modelOnionOf(options.modelMiddleware, link, prices),
  }
}
