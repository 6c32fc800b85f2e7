import type { RunContext, ToolContext } from '@shallot/core'
import { Aborted, abortable } from './abortable.js'
import type { Admission, BreakerMachine, Outcome, Ticket } from './breaker-machine.js'
import type { BreakerState } from './breaker-state.js'
import type { BreakerStore } from './breaker-store.js'
import { boundedStates, type MemoryBreakerStore } from './memory-breaker-store.js'
import { runStateStore } from './run-state-store.js'

/** What a home needs from the call it decides: its run, its logger and its events. A tool call's context is one; a model call's layer makes one. */
export type BreakerHost = Pick<ToolContext, 'run' | 'log' | 'emit'>

/** A change of one key's state: the machine's answer, carrying the state to write. */
export type Step<R> = (current: BreakerState | undefined) => R & { state: BreakerState }

/**
 * Where one breaker keeps its states, picked once when the breaker is made: this process's memory
 * (lifetime `stack`), the run's JSON state (lifetime `run`), or a shared store mirrored in memory.
 * The middleware asks it the same four questions whatever it is.
 */
export interface StateHome {
  /** The admission of a call to a closed circuit, decided without the clock; `undefined` when only {@link apply} can tell. */
  admitClosed(run: RunContext, key: string): Admission | undefined
  /** Whether settling `ticket` with `outcome` would write nothing, so it need not be applied. */
  quiet(run: RunContext, key: string, ticket: Ticket, outcome: Outcome): boolean
  /** Runs `step` on the key's state and writes what it returns; synchronous unless the store is not. */
  apply<R>(
    ctx: BreakerHost,
    key: string,
    signal: AbortSignal,
    step: Step<R>,
  ): (R & { state: BreakerState }) | Promise<R & { state: BreakerState }>
  /** The key's state for the model's tool list, without counting as a use. */
  peek(run: RunContext, key: string): BreakerState | undefined
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown })?.then === 'function'

/**
 * The home `lifetime` and `store` ask for.
 *
 * @example
 * const home = stateHome(machine, 1000, 'stack', undefined) // this process's memory
 */
export function stateHome(machine: BreakerMachine, maxKeys: number, lifetime: 'stack' | 'run', store: BreakerStore | undefined): StateHome {
  if (lifetime === 'run') return runHome(machine, maxKeys)
  const local = boundedStates(maxKeys)
  return store === undefined ? localHome(machine, local) : sharedHome(local, store)
}

function localHome(machine: BreakerMachine, local: MemoryBreakerStore): StateHome {
  return {
    admitClosed: (_run, key) => machine.admitClosed(local.get(key)),
    quiet: (_run, key, ticket, outcome) => machine.quiet(local.peek(key), ticket, outcome),
    apply(_ctx, key, _signal, step) {
      const current = local.get(key)
      const result = step(current)
      if (result.state !== current) local.set(key, result.state)
      return result
    },
    peek: (_run, key) => local.peek(key),
  }
}

function runHome(machine: BreakerMachine, maxKeys: number): StateHome {
  const states = runStateStore(machine, maxKeys)
  return {
    admitClosed: (run, key) => machine.admitClosed(states.get(run, key)),
    quiet: (run, key, ticket, outcome) => machine.quiet(states.get(run, key), ticket, outcome),
    apply(ctx, key, _signal, step) {
      const current = states.get(ctx.run, key)
      const result = step(current)
      if (result.state !== current) states.set(ctx.run, key, result.state)
      return result
    },
    peek: (run, key) => states.get(run, key),
  }
}

/**
 * A shared store, with this process's memory as its mirror: every state the store returns is kept
 * locally, and when the store fails the call is decided on the mirror.
 */
function sharedHome(local: MemoryBreakerStore, store: BreakerStore): StateHome {
  /** Waits for the store's write (`pending`, abortable on the caller's signal), then mirrors it as {@link written} does. */
  async function settleAsync<R>(
    ctx: BreakerHost,
    key: string,
    step: Step<R>,
    pending: Promise<BreakerState>,
    result: () => (R & { state: BreakerState }) | undefined,
  ): Promise<R & { state: BreakerState }> {
    let state: BreakerState
    try {
      state = await pending
    } catch (err) {
      // The caller gave up while the store was thinking: end the call as the caller said.
      if (err instanceof Aborted) throw err.reason
      return fallBack(ctx, key, step, err)
    }
    return written(ctx, key, step, state, result())
  }

  function written<R>(
    ctx: BreakerHost,
    key: string,
    step: Step<R>,
    state: BreakerState,
    result: (R & { state: BreakerState }) | undefined,
  ): R & { state: BreakerState } {
    if (result === undefined) return fallBack(ctx, key, step, new TypeError('store.update() resolved without calling change()'))
    local.set(key, state)
    return result
  }

  // The store is down: decide this call on the local state, which mirrors every state the store returned.
  function fallBack<R>(ctx: BreakerHost, key: string, step: Step<R>, err: unknown): R & { state: BreakerState } {
    ctx.log.warn({ key, err }, 'circuit breaker store failed; using local state')
    ctx.emit('circuit-breaker.store_error', { key, message: err instanceof Error ? err.message : String(err) })
    let result: (R & { state: BreakerState }) | undefined
    local.update(key, (current) => (result = step(current)).state)
    return result as R & { state: BreakerState }
  }

  return {
    admitClosed: () => undefined,
    // Only a plain call that says nothing about the tool leaves a shared state as it was.
    quiet: (_run, _key, ticket, outcome) => ticket.probe === 0 && outcome === 'neutral',
    apply<R>(ctx: BreakerHost, key: string, signal: AbortSignal, step: Step<R>) {
      let result: (R & { state: BreakerState }) | undefined
      let pending: BreakerState | Promise<BreakerState>
      try {
        pending = store.update(key, (current) => (result = step(current)).state)
      } catch (err) {
        return fallBack(ctx, key, step, err)
      }
      if (isPromise(pending)) {
        const waited = abortable(pending, signal)
        return settleAsync(ctx, key, step, waited, () => result)
      }
      return written(ctx, key, step, pending, result)
    },
    peek: (_run, key) => local.peek(key),
  }
}
