import type { ModelContext, ToolContext } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { Transition } from './breaker-machine.js'
import type { BreakerStore } from './breaker-store.js'
import type { FailurePolicy } from './failure-policy.js'

/** What `onStateChange` receives, and what the `circuit-breaker.state` event carries (plus `at` and `runId`). */
export interface BreakerStateChange extends Transition {
  readonly key: string
  /** `clock.now()` when it happened. */
  readonly at: number
  /** The run whose call caused it. */
  readonly runId: string
}

const fn = <T>(shape: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function ${shape}` })
const isPolicy = (v: unknown) =>
  typeof v === 'object' &&
  v !== null &&
  ['initial', 'isCounts', 'record', 'shouldOpen', 'failures', 'rebase'].every((m) => typeof (v as never)[m] === 'function')
const isStore = (v: unknown) =>
  typeof v === 'object' && v !== null && typeof (v as BreakerStore).update === 'function' && typeof (v as BreakerStore).get === 'function'

/**
 * Options of {@link circuitBreaker}, for its tool side and its model side alike. `key` and `isFailure`
 * receive the call's context: a `ToolContext` around a tool call, a `ModelContext` around a model call
 * (tell them apart with `'call' in ctx`).
 */
export const circuitBreakerOptionsSchema = z
  .strictObject({
    /**
     * Which breaker a call belongs to: a tool call's default is the tool's name, a model call's
     * `model:<provider>:<name>` ({@link modelBreakerKey}). Return `undefined` to let a call bypass the breaker.
     */
    key: fn<(ctx: ToolContext | ModelContext) => string | undefined>('(ctx) => string | undefined').optional(),
    /** When the circuit opens. Default `consecutive({ threshold: 5 })`. */
    policy: z
      .custom<FailurePolicy>(isPolicy, {
        message: 'must be consecutive({ threshold }) or sampling({ failureRatio, minimumThroughput, windowMs })',
      })
      .optional(),
    /** How long the circuit stays open before one probe may test the tool. Default 30,000 ms. */
    cooldownMs: z.number().int().positive().default(30_000),
    /** Each reopening without a successful close multiplies the cooldown by this. Default 1 (no growth). */
    cooldownGrowth: z.number().min(1).max(100).default(1),
    /** Ceiling of the grown cooldown and of a failure's `retryAfterMs`. Default 10 × `cooldownMs`. */
    maxCooldownMs: z.number().int().positive().optional(),
    /**
     * Probes a half-open circuit lets through at once; the rest are refused. With `halfOpenSuccesses`
     * above 1, a successful probe keeps its place until the trial ends, so this is also the most
     * probes the trial lets through. Default 1.
     */
    halfOpenProbes: z.number().int().min(1).max(1000).default(1),
    /** Successful probes that close a half-open circuit; the first failed probe reopens it. At most `halfOpenProbes`. Default 1. */
    halfOpenSuccesses: z.number().int().min(1).max(1000).default(1),
    /** A probe still running after this loses its slot (and its verdict) to the next call. Default 60,000 ms. */
    maxHalfOpenMs: z.number().int().positive().default(60_000),
    /** `stack`: one breaker per key for every run of this middleware. `run`: counts live in each run's state. Default `stack`. */
    lifetime: z
      .enum(['stack', 'run'])
      .optional()
      .meta({ description: "'stack' (default): one breaker per key for every run; 'run': counts live in each run's state." }),
    /** @deprecated The old name of `lifetime` (it clashed with idempotency's tenant `scope`); goes in the next minor version. */
    scope: z
      .enum(['stack', 'run'])
      .optional()
      .meta({ deprecated: true, description: 'Deprecated name of lifetime; goes in the next minor version.' }),
    /** Most breakers kept (per stack, or per run); the least recently used is forgotten. Default 1000. */
    maxKeys: z.number().int().min(1).default(1000),
    /** Where stack-scoped state lives. Default: this process's memory. */
    store: z.custom<BreakerStore>(isStore, { message: 'must be a BreakerStore { get(key), update(key, change) }' }).optional(),
    /**
     * With a shared `store`: how long a circuit the store showed closed is trusted before this worker
     * reads it again. Calls to it ask the store nothing meanwhile and their successes are written with
     * the key's next write; failures are written at once. An opening on another worker stops this one's
     * calls within this bound (plus one read). 0 asks the store on every call. Default 1000 ms.
     */
    storeRefreshMs: z.number().int().min(0).max(3_600_000).default(1000),
    /**
     * Which errors count against the circuit. Default: {@link indictsTool} for a tool call, core's transient
     * model errors (408/429/5xx, timeouts, dropped connections) for a model call. Hard errors and caller
     * cancellation never reach it.
     */
    isFailure: fn<(error: unknown, ctx: ToolContext | ModelContext) => boolean>('(error, ctx) => boolean').optional(),
    /** Called on every state change, after it is logged and emitted. */
    onStateChange: fn<(change: BreakerStateChange) => void>('(change) => void').optional(),
  })
  .superRefine(checkBreakerOptions)

/**
 * The checks across options, the same for both sides: a trial that can close,
 * a ceiling above the cooldown, one name for the lifetime, a store only where state is shared.
 *
 * @example
 * z.strictObject(circuitBreakerOptionsSchema.shape).superRefine(checkBreakerOptions)
 */
export function checkBreakerOptions(
  o: {
    halfOpenProbes: number
    halfOpenSuccesses: number
    cooldownMs: number
    maxCooldownMs?: number | undefined
    lifetime?: 'stack' | 'run' | undefined
    scope?: 'stack' | 'run' | undefined
    store?: unknown
  },
  issues: z.RefinementCtx,
): void {
  checkHalfOpen(o, issues)
  if (o.maxCooldownMs !== undefined && o.maxCooldownMs < o.cooldownMs) {
    issues.addIssue({ code: 'custom', path: ['maxCooldownMs'], message: `must be at least cooldownMs (${o.cooldownMs})` })
  }
  if (o.lifetime !== undefined && o.scope !== undefined && o.lifetime !== o.scope) {
    issues.addIssue({
      code: 'custom',
      path: ['scope'],
      message: `is the deprecated name of lifetime, and says '${o.scope}' where lifetime says '${o.lifetime}'; keep only lifetime`,
    })
  }
  if (o.store !== undefined && lifetimeOf(o) === 'run') {
    issues.addIssue({
      code: 'custom',
      path: ['store'],
      message: "applies only to lifetime 'stack'; a run-scoped breaker keeps its state in run.state",
    })
  }
}

/** What {@link circuitBreaker} accepts. */
export type CircuitBreakerOptions = z.input<typeof circuitBreakerOptionsSchema>

/** The options once checked, defaults filled in: what each side is built from. */
export type CircuitBreakerConfig = z.output<typeof circuitBreakerOptionsSchema>

export const parseCircuitBreakerOptions = optionsParser('circuitBreaker()', circuitBreakerOptionsSchema)

/**
 * `halfOpenSuccesses` successes out of `halfOpenProbes` probes: a trial that needs more successes
 * than it lets probes through could never close.
 *
 * @example
 * z.object({ halfOpenProbes: z.number(), halfOpenSuccesses: z.number() }).superRefine(checkHalfOpen)
 */
export function checkHalfOpen(o: { halfOpenProbes: number; halfOpenSuccesses: number }, issues: z.RefinementCtx): void {
  if (o.halfOpenSuccesses <= o.halfOpenProbes) return
  issues.addIssue({
    code: 'custom',
    path: ['halfOpenSuccesses'],
    message: `must be at most halfOpenProbes (${o.halfOpenProbes}): a trial of ${o.halfOpenProbes} probe(s) cannot see ${o.halfOpenSuccesses} successes; raise halfOpenProbes to at least ${o.halfOpenSuccesses}`,
  })
}

/**
 * `lifetime`, or its deprecated alias `scope`, or the default `stack`.
 *
 * @example
 * lifetimeOf({ scope: 'run' }) // 'run'
 */
export function lifetimeOf(options: { lifetime?: 'stack' | 'run' | undefined; scope?: 'stack' | 'run' | undefined }): 'stack' | 'run' {
  return options.lifetime ?? options.scope ?? 'stack'
}
