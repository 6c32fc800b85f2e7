import type { BreakerMachine } from './breaker-machine.js'
import type { BreakerState } from './breaker-state.js'
import type { BreakerHost, HomeOptions, StateHome, Step } from './home.js'
import { boundedStates, type MemoryBreakerStore } from './memory-breaker-store.js'
import { runStateStore } from './run-state-store.js'
import { sharedHome } from './shared-home.js'

/**
 * The home `lifetime` and `store` ask for.
 *
 * @example
 * const home = stateHome(machine, { maxKeys: 1000, lifetime: 'stack', store: undefined, storeRefreshMs: 1000 }) // this process's memory
 */
export function stateHome(machine: BreakerMachine, o: HomeOptions): StateHome {
  if (o.lifetime === 'run') return runHome(machine, o.maxKeys)
  if (o.store === undefined) return localHome(machine, boundedStates(o.maxKeys))
  return sharedHome(machine, { ...o, store: o.store })
}

function localHome(machine: BreakerMachine, local: MemoryBreakerStore): StateHome {
  function apply<R>(_ctx: BreakerHost, key: string, _signal: AbortSignal, step: Step<R>): R & { state: BreakerState } {
    const current = local.get(key)
    const result = step(current)
    if (result.state !== current) local.set(key, result.state)
    return result
  }
  return {
    admitClosed: (_ctx, key) => machine.admitClosed(local.get(key)),
    admit: apply,
    settleQuietly: (_ctx, key, ticket, outcome) => machine.quiet(local.peek(key), ticket, outcome),
    apply,
    peek: (_run, key) => local.peek(key),
  }
}

function runHome(machine: BreakerMachine, maxKeys: number): StateHome {
  const states = runStateStore(machine, maxKeys)
  function apply<R>(ctx: BreakerHost, key: string, _signal: AbortSignal, step: Step<R>): R & { state: BreakerState } {
    const current = states.get(ctx.run, key)
    const result = step(current)
    if (result.state !== current) states.set(ctx.run, key, result.state)
    return result
  }
  return {
    admitClosed: (ctx, key) => machine.admitClosed(states.get(ctx.run, key)),
    admit: apply,
    settleQuietly: (ctx, key, ticket, outcome) => machine.quiet(states.get(ctx.run, key), ticket, outcome),
    apply,
    peek: (run, key) => states.get(run, key),
  }
}
