import { abortReason, LoopError, type Middleware, type Next, type ToolContext, ToolError, trustedMiddleware } from '@shallot/core'
import { type AbortSource, callNext, optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import {
  type Admission,
  type BreakerMachine,
  breakerMachine,
  type Outcome,
  type Settlement,
  type Ticket,
  type Transition,
} from './breaker-machine.js'
import type { BreakerStore } from './breaker-store.js'
import { circuitOpenError } from './circuit-open-error.js'
import { consecutive } from './consecutive.js'
import type { FailurePolicy } from './failure-policy.js'
import { indictsTool } from './indicts-tool.js'
import { runKeys } from './run-keys.js'
import { type StateHome, stateHome } from './state-home.js'

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
const isStore = (v: unknown) => typeof v === 'object' && v !== null && typeof (v as BreakerStore).update === 'function'

/** Options of {@link circuitBreaker}. */
export const circuitBreakerOptionsSchema = z
  .strictObject({
    /** Which breaker a call belongs to. Default: the tool's name. Return `undefined` to let a call bypass the breaker. */
    key: fn<(ctx: ToolContext) => string | undefined>('(ctx) => string | undefined').optional(),
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
    /** Which errors count against the circuit. Default {@link indictsTool}. Hard errors and caller cancellation never do. */
    isFailure: fn<(error: unknown, ctx: ToolContext) => boolean>('(error, ctx) => boolean').optional(),
    /** Called on every state change, after it is logged and emitted. */
    onStateChange: fn<(change: BreakerStateChange) => void>('(change) => void').optional(),
  })
  .superRefine(checkBreakerOptions)

/**
 * The checks across options, the same for the tool and the model breaker: a trial that can close,
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

export type CircuitBreakerOptions = z.input<typeof circuitBreakerOptionsSchema>

const parseCircuitBreakerOptions = optionsParser('circuitBreaker()', circuitBreakerOptionsSchema)

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

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown })?.then === 'function'

/**
 * A per-tool circuit breaker: after repeated failures that indict a tool, calls to it are refused
 * with a soft `circuit_open` the model can route around; after the cooldown one probe (or
 * `halfOpenProbes`) tests the tool, and its success closes the circuit. No timers: the move to
 * half-open happens on the first call after the cooldown, by the injected monotonic clock.
 * Place it outside retry: it sees each call once, after its retries, and a failed call counts once
 * per request it made, so a dead tool opens the circuit after `threshold` requests (decision 407).
 *
 * @example
 * const stack = createStack({
 *   middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 }), retry(), timeout({ ms: 5000 })],
 *   tools: [search, getTicket],
 * })
 */
export function circuitBreaker(options?: CircuitBreakerOptions): Middleware {
  const o = parseCircuitBreakerOptions(options)
  const machine = breakerMachine({
    policy: o.policy ?? consecutive(),
    cooldownMs: o.cooldownMs,
    cooldownGrowth: o.cooldownGrowth,
    maxCooldownMs: o.maxCooldownMs ?? o.cooldownMs * 10,
    halfOpenProbes: o.halfOpenProbes,
    halfOpenSuccesses: o.halfOpenSuccesses,
    maxHalfOpenMs: o.maxHalfOpenMs,
  })
  const b: Breaker = {
    machine,
    home: stateHome(machine, o.maxKeys, lifetimeOf(o), o.store),
    onStateChange: o.onStateChange,
    isFailure: o.isFailure ?? indictsTool,
    listenerFailed: false,
  }
  const { home } = b
  const keyOf = o.key
  const keysOfRun = runKeys(o.maxKeys)

  const middleware: Middleware = function circuitBreaker(ctx, next) {
    const tool = ctx.tool
    if (tool === undefined) return next()
    const key = keyOf === undefined ? tool.name : keyOf(ctx)
    if (key === undefined) return next()
    if (keyOf !== undefined) keysOfRun.note(ctx.run, tool.name, key)
    // The signal as it stands, not made real: a store's wait makes it real only if it must wait.
    const signal = ctx.currentSignal()
    if (signal.aborted) return Promise.reject(abortReason(signal))
    // The happy path (a closed circuit, in local or run state) reads neither the clock nor writes anything.
    const admission = home.admitClosed(ctx.run, key)
    return admission === undefined
      ? admitThenProceed(b, ctx, next, tool.name, key, signal)
      : proceed(b, ctx, next, tool.name, key, signal, admission)
  }

  // Keeps the onion's contract by construction (docs/decisions/270-compose-fast-path.md): compose calls it without the misuse bookkeeping.
  trustedMiddleware(middleware)
  middleware.describeTool = function describeTool(tool, run, now) {
    const key = keyOf === undefined ? tool.name : keysOfRun.get(run, tool.name)
    if (key === undefined) return undefined
    const state = home.peek(run, key)
    if (state === undefined || state.circuit !== 'open') return undefined
    const remaining = machine.remainingMs(state, now)
    if (remaining === undefined || remaining <= 0) return undefined
    const which = key === tool.name ? '' : ` (${key})`
    return `UNAVAILABLE${which}: circuit open, retry in ${Math.ceil(remaining / 1000)}s`
  }
  return middleware
}

/** One `circuitBreaker()`'s parts, built once: every call it handles goes through the functions below. */
interface Breaker {
  readonly machine: BreakerMachine
  readonly home: StateHome
  readonly onStateChange: ((change: BreakerStateChange) => void) | undefined
  readonly isFailure: (error: unknown, ctx: ToolContext) => boolean
  /** A listener that throws is logged once, not on every state change after. */
  listenerFailed: boolean
}

/**
 * The call once admitted (or refused): reactions on next()'s promise rather than an await, so a call
 * blocked in its tool keeps no suspended frame here.
 */
function proceed(
  b: Breaker,
  ctx: ToolContext,
  next: Next,
  tool: string,
  key: string,
  signal: AbortSource,
  admission: Admission,
): Promise<void> {
  try {
    if (admission.changes.length > 0) report(b, ctx, key, admission.changes)
    if (admission.expired > 0) ctx.emit('circuit-breaker.probe_expired', { key, count: admission.expired })
    if (!admission.pass) {
      const { circuit, failures } = admission.state
      ctx.emit('circuit-breaker.refused', { key, circuit, retryAfterMs: admission.retryAfterMs })
      throw circuitOpenError({ tool, key, circuit: circuit as 'open' | 'half-open', failures, retryAfterMs: admission.retryAfterMs })
    }
    if (admission.probe !== 0) ctx.emit('circuit-breaker.probe', { key, probe: admission.probe })
  } catch (refused) {
    return Promise.reject(refused)
  }
  // Retry inside the breaker bumps ctx.attempt for each repeat: the requests this call made.
  const firstAttempt = ctx.attempt
  return callNext(next).then(
    () => settle(b, ctx, key, signal, admission, 'success', undefined),
    (err: unknown) => {
      const settled = settle(b, ctx, key, signal, admission, judge(b, ctx, key, err, signal), err, ctx.attempt - firstAttempt + 1)
      if (settled === undefined) throw err
      return settled.then(() => {
        throw err
      })
    },
  )
}

/** A circuit that is not closed in local or run state, or a shared store: admission may wait on the store. */
async function admitThenProceed(b: Breaker, ctx: ToolContext, next: Next, tool: string, key: string, signal: AbortSource): Promise<void> {
  const now = ctx.clock.now()
  const pending = b.home.apply(ctx, key, signal, (current) => b.machine.admit(current, now))
  return proceed(b, ctx, next, tool, key, signal, isPromise(pending) ? await pending : pending)
}

function judge(b: Breaker, ctx: ToolContext, key: string, error: unknown, signal: AbortSource): Outcome {
  if (LoopError.is(error)) return 'neutral'
  let verdictOn = error
  if (signal.aborted) {
    // The caller's own cancellation says nothing about the tool; an outer deadline (a ToolError) might.
    const reason = abortReason(signal)
    if (LoopError.is(reason)) return 'neutral'
    verdictOn = reason
  }
  try {
    return b.isFailure(verdictOn, ctx) ? 'failure' : 'neutral'
  } catch (err) {
    ctx.log.error({ key, err }, 'circuit breaker isFailure threw; not counting this error')
    return 'neutral'
  }
}

function settle(
  b: Breaker,
  ctx: ToolContext,
  key: string,
  signal: AbortSource,
  ticket: Ticket,
  outcome: Outcome,
  error: unknown,
  attempts = 1,
): void | Promise<void> {
  if (b.home.quiet(ctx.run, key, ticket, outcome)) return
  const now = ctx.clock.now()
  const retryAfterMs = outcome === 'failure' && ToolError.is(error) ? error.retryAfterMs : undefined
  const done = b.home.apply(ctx, key, signal, (current) => b.machine.settle(current, ticket, outcome, now, retryAfterMs, attempts))
  const after = ({ stale, change, trial }: Settlement) => {
    if (stale) ctx.emit('circuit-breaker.stale', { key, outcome, probe: ticket.probe })
    else if (trial !== undefined) ctx.emit('circuit-breaker.probe_succeeded', { key, probe: ticket.probe, ...trial })
    else if (outcome === 'failure') ctx.emit('circuit-breaker.failure', { key, code: ToolError.is(error) ? error.code : 'thrown' })
    else if (outcome === 'neutral') ctx.emit('circuit-breaker.probe_released', { key, probe: ticket.probe })
    if (change !== undefined) report(b, ctx, key, [change])
  }
  if (isPromise(done)) return done.then(after)
  after(done)
}

function report(b: Breaker, ctx: ToolContext, key: string, changes: readonly Transition[]): void {
  const { onStateChange } = b
  for (const { from, to, reason } of changes) {
    const fields = { key, from, to, reason }
    ctx.log.info(fields, 'circuit breaker state change')
    ctx.emit('circuit-breaker.state', fields)
    if (onStateChange === undefined) continue
    try {
      onStateChange({ ...fields, at: ctx.clock.now(), runId: ctx.run.id })
    } catch (err) {
      if (b.listenerFailed) continue
      b.listenerFailed = true
      ctx.log.error({ key, err }, 'circuit breaker onStateChange threw; the call goes on, and its later throws are not logged')
    }
  }
}
