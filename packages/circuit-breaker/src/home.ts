import type { RunContext, ToolContext } from '@shallot/core'
import type { Admission, Outcome, Ticket } from './breaker-machine.js'
import type { BreakerState } from './breaker-state.js'
import type { BreakerStore } from './breaker-store.js'

/** What a home reads of every call: its run and its clock. A tool call's and a model call's context are both one. */
export type HomeCall = Pick<ToolContext, 'run' | 'clock'>

/** What a home needs from a call it may write for: also its logger and its events. A tool call's context is one; a model call's layer makes one. */
export type BreakerHost = Pick<ToolContext, 'run' | 'clock' | 'log' | 'emit'>

/** A change of one key's state: the machine's answer, carrying the state to write. */
export type Step<R> = (current: BreakerState | undefined) => R & { state: BreakerState }

/**
 * Where one breaker keeps its states, picked once when the breaker is made: this process's memory
 * (lifetime `stack`), the run's JSON state (lifetime `run`), or a shared store seen through a local
 * view (`shared-home.ts`). The middleware asks it the same five questions whatever it is.
 */
export interface StateHome {
  /** The admission of a call to a circuit known closed, decided without waiting; `undefined` when only {@link admit} can tell. */
  admitClosed(ctx: HomeCall, key: string): Admission | undefined
  /** Admits a call with `step` (the machine's admission): a shared home may first read the store again. */
  admit(ctx: BreakerHost, key: string, signal: AbortSignal, step: Step<Admission>): Admission | Promise<Admission>
  /**
   * Settles `ticket` with `outcome` when that needs no write now, and answers true: it changes nothing,
   * or (a shared home) it is a success of a closed circuit, held for the key's next write. False when
   * only {@link apply} can settle it.
   */
  settleQuietly(ctx: HomeCall, key: string, ticket: Ticket, outcome: Outcome): boolean
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

/** Where a breaker's states live, from its options. */
export interface HomeOptions {
  readonly maxKeys: number
  readonly lifetime: 'stack' | 'run'
  readonly store: BreakerStore | undefined
  /** With a store: how long a closed circuit read from it is trusted (0: read it on every call). */
  readonly storeRefreshMs: number
}
