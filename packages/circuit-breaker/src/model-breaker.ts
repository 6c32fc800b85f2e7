import { abortReason, LoopError, type ModelContext, type ModelMiddleware, type ModelNext, ToolError } from '@shallot/core'
import { isTransientModelError } from '@shallot/core/kit'
import type { Admission, FailureFacts, Outcome, Ticket, Transition } from './breaker-machine.js'
import type { Circuit } from './breaker-state.js'
import { type CircuitBreakerConfig, lifetimeOf } from './circuit-breaker-options.js'
import type { BreakerHost, StateHome } from './home.js'
import { keyFrom } from './key-from.js'
import { machineOf } from './machine-of.js'
import { stateHome } from './state-home.js'
import { stateListener } from './state-listener.js'

/** What the model breaker leaves in the context for the layers outside it (fallback reads it): the circuit of the model it judged. */
export interface ModelCircuitNote {
  readonly model: string
  readonly key: string
  readonly circuit: Circuit
  /** True when the call was refused without asking the model. */
  readonly refused: boolean
}

declare module '@shallot/core' {
  interface ModelContext {
    /** Set by the model side of `circuitBreaker()` on every call it judges: the circuit of `ctx.model` as the call left it. */
    circuit?: ModelCircuitNote | undefined
  }
}

/**
 * The key of a model's breaker: `model:` keeps it apart from a tool of the same name in a shared
 * store, the provider apart from another provider's model of that name.
 *
 * @example
 * modelBreakerKey({ name: 'gpt-4o', provider: 'openai' }) // 'model:openai:gpt-4o'
 */
export function modelBreakerKey(model: { readonly name: string; readonly provider?: string | undefined }): string {
  return model.provider === undefined ? `model:${model.name}` : `model:${model.provider}:${model.name}`
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/**
 * The refusal of a model call whose circuit is open: the call never reached the provider, so it is
 * safe to repeat, and not retryable (a retry layer inside the breaker must not spin on it). A
 * fallback layer outside moves on to the next model.
 *
 * @example
 * modelCircuitOpenError({ model: 'gpt-4o', key: 'model:gpt-4o', circuit: 'open', failures: 3, retryInMs: 1200 }).message
 * // "model 'gpt-4o' skipped: circuit open after 3 failures (1200 ms left)"
 */
export function modelCircuitOpenError(facts: {
  model: string
  key: string
  circuit: 'open' | 'half-open'
  failures: number
  retryInMs: number | undefined
}): ToolError {
  const { model, key, circuit, failures, retryInMs } = facts
  const wait = retryInMs === undefined ? undefined : Math.max(1, Math.ceil(retryInMs))
  const left = wait === undefined ? 'a probe is in flight' : `${wait} ms left`
  return new ToolError('circuit_open', `model '${model}' skipped: circuit ${circuit} after ${plural(failures, 'failure')} (${left})`, {
    category: 'transient',
    retryable: false,
    safeToRepeat: true,
    ...(wait === undefined ? {} : { retryAfterMs: wait }),
    details: { model, key, circuit, failures },
  })
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown })?.then === 'function'

/** The circuit one model call is judged on: the model, and the breaker key it falls under. */
interface ModelCircuit {
  readonly model: string
  readonly key: string
}

const noEvent = () => {}
/** What a state home is handed: the run and its logger; a store's failure is logged, as a model call has no event for it. */
const hostOf = (ctx: ModelContext): BreakerHost => ({ run: ctx.run, clock: ctx.clock, log: ctx.log, emit: noEvent })

/**
 * The model side of {@link circuitBreaker}: one breaker per model (per agent, unless a shared `store`
 * says otherwise), the same machine, policies and store as the tool side. After repeated transient
 * failures the model's calls fail fast with a `circuit_open` ToolError (no request is made) until the
 * cooldown ends; then one probe (or `halfOpenProbes`) tests it. Every change is a `model.circuit`
 * agent event.
 */
export function modelBreaker(o: CircuitBreakerConfig): ModelMiddleware {
  const machine = machineOf(o)
  const lifetime = lifetimeOf(o)
  // A shared store or run state is one home for every agent; this process's memory is one per agent's model onion.
  const homeOptions = { maxKeys: o.maxKeys, lifetime, store: o.store, storeRefreshMs: o.storeRefreshMs }
  const common = lifetime === 'run' || o.store !== undefined ? stateHome(machine, homeOptions) : undefined
  const perAgent = new WeakMap<object, StateHome>()
  const homeOf = (stackKey: object): StateHome => {
    if (common !== undefined) return common
    let home = perAgent.get(stackKey)
    if (home === undefined) perAgent.set(stackKey, (home = stateHome(machine, { ...homeOptions, lifetime: 'stack' })))
    return home
  }
  const isFailure = o.isFailure ?? isTransientModelError
  const tell = stateListener(o.onStateChange)

  function report(ctx: ModelContext, model: string, key: string, changes: readonly Transition[]): void {
    for (const { from, to, reason } of changes) {
      ctx.log.warn({ model, key, from, to, reason }, 'model circuit changed')
      ctx.emit({ type: 'model.circuit', at: ctx.clock.now(), runId: ctx.run.id, model, from, to, reason })
      tell({ key, from, to, reason, at: ctx.clock.now(), runId: ctx.run.id }, ctx.log)
    }
  }

  function judge(ctx: ModelContext, key: string, error: unknown): Outcome {
    if (LoopError.is(error)) return 'neutral'
    let verdictOn = error
    if (ctx.signal.aborted) {
      // The run's cancellation says nothing about the model; an outer deadline (a ToolError) might.
      const reason = abortReason(ctx.signal)
      if (LoopError.is(reason)) return 'neutral'
      verdictOn = reason
    }
    try {
      return isFailure(verdictOn, ctx) ? 'failure' : 'neutral'
    } catch (err) {
      ctx.log.error({ key, err }, 'circuit breaker isFailure threw; not counting this error')
      return 'neutral'
    }
  }

  /** Settles a model call's outcome on its circuit; `failure` is what a failed call said about itself. */
  async function settle(ctx: ModelContext, { model, key }: ModelCircuit, ticket: Ticket, outcome: Outcome, failure?: FailureFacts) {
    const home = homeOf(ctx.stackKey)
    if (!home.settleQuietly(ctx, key, ticket, outcome)) {
      // The clock is read in the step, after a shared store's read, as the tool breaker does.
      const step = home.apply(hostOf(ctx), key, ctx.signal, (current) => machine.settle(current, ticket, outcome, ctx.clock.now(), failure))
      const { change } = isPromise(step) ? await step : step
      if (change !== undefined) report(ctx, model, key, [change])
    }
    ctx.circuit = { model, key, circuit: home.peek(ctx.run, key)?.circuit ?? 'closed', refused: false }
  }

  // Keeps the onion's contract: at most one next(), awaited (or returned) before it settles.
  return async function circuitBreakerOfModels(ctx: ModelContext, next: ModelNext): Promise<void> {
    const key = o.key === undefined ? modelBreakerKey(ctx.model) : keyFrom(o.key, ctx)
    if (key === undefined) return next()
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    const model = ctx.model.name
    const home = homeOf(ctx.stackKey)
    let admission: Admission | undefined = home.admitClosed(ctx, key)
    if (admission === undefined) {
      const pending = home.admit(hostOf(ctx), key, ctx.signal, (current) => machine.admit(current, ctx.clock.now()))
      admission = isPromise(pending) ? await pending : pending
      if (admission.changes.length > 0) report(ctx, model, key, admission.changes)
    }
    if (!admission.pass) {
      const circuit = admission.state.circuit as 'open' | 'half-open'
      ctx.circuit = { model, key, circuit, refused: true }
      throw modelCircuitOpenError({ model, key, circuit, failures: admission.state.failures, retryInMs: admission.retryAfterMs })
    }
    // A retry layer inside bumps ctx.attempt for each repeat: a failure counts once per request it made.
    const first = ctx.attempt
    try {
      await next()
    } catch (err) {
      const outcome = judge(ctx, key, err)
      const retryAfterMs = outcome === 'failure' && ToolError.is(err) ? err.retryAfterMs : undefined
      await settle(ctx, { model, key }, admission, outcome, { retryAfterMs, attempts: ctx.attempt - first + 1 })
      throw err
    }
    // The happy path: a success that changes nothing (a closed circuit with nothing counted), or one a shared home holds, writes nothing now.
    if (home.settleQuietly(ctx, key, admission, 'success')) ctx.circuit = { model, key, circuit: 'closed', refused: false }
    else await settle(ctx, { model, key }, admission, 'success')
  }
}
