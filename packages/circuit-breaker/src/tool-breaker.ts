import { abortReason, type Logger, LoopError, type Middleware, type Next, type ToolContext, ToolError } from '@shallot/core'
import type { Admission, BreakerMachine, Outcome, Ticket, Transition } from './breaker-machine.js'
import { type BreakerStateChange, type CircuitBreakerConfig, lifetimeOf } from './circuit-breaker-options.js'
import { circuitOpenError } from './circuit-open-error.js'
import type { StateHome } from './home.js'
import { indictsTool } from './indicts-tool.js'
import { keyFrom } from './key-from.js'
import { machineOf } from './machine-of.js'
import { runKeys } from './run-keys.js'
import { stateHome } from './state-home.js'
import { stateListener } from './state-listener.js'

/**
 * The tool side of {@link circuitBreaker}: one breaker per tool (or per `key`) for every run of the
 * stack (or per run, with lifetime `run`), refusing calls with a soft `circuit_open` while open.
 */
export function toolBreaker(o: CircuitBreakerConfig): Middleware {
  const machine = machineOf(o)
  const b: Breaker = {
    machine,
    home: stateHome(machine, { maxKeys: o.maxKeys, lifetime: lifetimeOf(o), store: o.store, storeRefreshMs: o.storeRefreshMs }),
    tell: stateListener(o.onStateChange),
    isFailure: o.isFailure ?? indictsTool,
  }
  const { home } = b
  const keyOf = o.key
  const keysOfRun = runKeys(o.maxKeys)

  const middleware: Middleware = async function circuitBreaker(ctx, next) {
    const tool = ctx.tool
    if (tool === undefined) return next()
    const key = keyOf === undefined ? tool.name : keyFrom(keyOf, ctx)
    if (key === undefined) return next()
    if (keyOf !== undefined) keysOfRun.note(ctx.run, tool.name, key)
    const signal = ctx.signal
    if (signal.aborted) throw abortReason(signal)
    return guarded({ b, ctx, tool: tool.name, key, signal }, next)
  }

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
  /** The user's onStateChange: one that throws or rejects is logged once, not on every state change after. */
  readonly tell: (change: BreakerStateChange, log: Logger) => void
  readonly isFailure: (error: unknown, ctx: ToolContext) => boolean
}

/** One call through the breaker: the layer's parts, and the breaker the call is keyed to. */
interface BreakerCall {
  readonly b: Breaker
  readonly ctx: ToolContext
  readonly tool: string
  readonly key: string
  /** The signal the call came with: a shared store's wait stops when it aborts. */
  readonly signal: AbortSignal
}

/** Admits the call (or refuses it with `circuit_open`), runs it, and settles its outcome on the breaker. */
async function guarded(call: BreakerCall, next: Next): Promise<void> {
  const { b, ctx } = call
  // The happy path (a closed circuit in local or run state, or one a shared store showed closed lately) waits for nothing.
  const admission = b.home.admitClosed(ctx, call.key) ?? (await admit(call))
  announce(call, admission)
  // Retry inside the breaker bumps ctx.attempt for each repeat: the requests this call made.
  const firstAttempt = ctx.attempt
  try {
    await next()
  } catch (err) {
    await settle(call, admission, judge(call, err), err, ctx.attempt - firstAttempt + 1)
    throw err
  }
  await settle(call, admission, 'success', undefined, 1)
}

/**
 * A circuit that is not closed in local or run state, or a shared store: admission may wait on the store.
 * Admission and settlement read the clock inside the step, when the home applies it: a shared store
 * hands the step times no later than the moment update() was called, so a `now` read then is never
 * earlier than them. A `now` read before the call could be, by however long the process stalled
 * between the two reads (preempted, collecting garbage): a probe slot another worker took a moment
 * ago would then read as a time from another clock, be forgotten, and a second probe run.
 */
function admit({ b, ctx, key, signal }: BreakerCall): Admission | Promise<Admission> {
  return b.home.admit(ctx, key, signal, (current) => b.machine.admit(current, ctx.clock.now()))
}

/** Tells what admitting the call changed; throws `circuit_open` when it was refused. */
function announce(call: BreakerCall, admission: Admission): void {
  const { ctx, key } = call
  if (admission.changes.length > 0) report(call, admission.changes)
  if (admission.expired > 0) ctx.emit('circuit-breaker.probe_expired', { key, count: admission.expired })
  if (!admission.pass) {
    const { circuit, failures } = admission.state
    ctx.emit('circuit-breaker.refused', { key, circuit, retryAfterMs: admission.retryAfterMs })
    throw circuitOpenError({
      tool: call.tool,
      key,
      circuit: circuit as 'open' | 'half-open',
      failures,
      retryAfterMs: admission.retryAfterMs,
    })
  }
  if (admission.probe !== 0) ctx.emit('circuit-breaker.probe', { key, probe: admission.probe })
}

function judge({ b, ctx, key, signal }: BreakerCall, error: unknown): Outcome {
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

async function settle(call: BreakerCall, ticket: Ticket, outcome: Outcome, error: unknown, attempts: number): Promise<void> {
  const { b, ctx, key, signal } = call
  if (b.home.settleQuietly(ctx, key, ticket, outcome)) return
  const retryAfterMs = outcome === 'failure' && ToolError.is(error) ? error.retryAfterMs : undefined
  // The clock is read in the step, as in admit(): a probe's own slot must not look like the future.
  const { stale, change, trial } = await b.home.apply(ctx, key, signal, (current) =>
    b.machine.settle(current, ticket, outcome, ctx.clock.now(), { retryAfterMs, attempts }),
  )
  if (stale) ctx.emit('circuit-breaker.stale', { key, outcome, probe: ticket.probe })
  else if (trial !== undefined) ctx.emit('circuit-breaker.probe_succeeded', { key, probe: ticket.probe, ...trial })
  else if (outcome === 'failure') ctx.emit('circuit-breaker.failure', { key, code: ToolError.is(error) ? error.code : 'thrown' })
  else if (outcome === 'neutral') ctx.emit('circuit-breaker.probe_released', { key, probe: ticket.probe })
  if (change !== undefined) report(call, [change])
}

function report({ b, ctx, key }: BreakerCall, changes: readonly Transition[]): void {
  for (const { from, to, reason } of changes) {
    const fields = { key, from, to, reason }
    ctx.log.info(fields, 'circuit breaker state change')
    ctx.emit('circuit-breaker.state', fields)
    b.tell({ ...fields, at: ctx.clock.now(), runId: ctx.run.id }, ctx.log)
  }
}
