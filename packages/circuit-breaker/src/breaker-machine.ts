import type { Json } from '@shallot/core'
import { waitMsOf } from '@shallot/core/kit'
import { type BreakerState, type Circuit, isStateOf, isTally } from './breaker-state.js'
import type { FailurePolicy } from './failure-policy.js'

/** A move from one circuit to another, and why. */
export interface Transition {
  readonly from: Circuit
  readonly to: Circuit
  readonly reason: string
}

/** What a call was admitted as: a call of a closed circuit (`probe` 0) or a half-open probe. */
export interface Ticket {
  readonly generation: number
  readonly probe: number
}

export interface Admission extends Ticket {
  readonly pass: boolean
  readonly state: BreakerState
  /** Refusals: how long until the circuit could let this call through, when known. */
  readonly retryAfterMs: number | undefined
  readonly changes: readonly Transition[]
  /** Probes that held a slot past `maxHalfOpenMs` and lost it now. */
  readonly expired: number
}

/** `failure` and `success` are verdicts; `neutral` (a model mistake, a cancellation) is none. */
export type Outcome = 'success' | 'failure' | 'neutral'

export interface Settlement {
  readonly state: BreakerState
  readonly change: Transition | undefined
  /** The outcome was a verdict but the ticket is from an older generation or a lost slot, so it decided nothing. */
  readonly stale: boolean
  /** A successful probe that did not close the circuit yet: the trial's successes so far, and how many close it. */
  readonly trial?: { readonly successes: number; readonly needed: number }
}

/** What a failed call said about itself, beyond failing. */
export interface FailureFacts {
  /** The server's pushback: an opening this failure causes lasts at least this long. */
  readonly retryAfterMs?: number | undefined
  /** How many requests the failure made (a retry layer inside the breaker repeats it): a closed circuit counts each one. Default 1. */
  readonly attempts?: number | undefined
}

export interface BreakerMachineConfig {
  policy: FailurePolicy
  cooldownMs: number
  cooldownGrowth: number
  maxCooldownMs: number
  halfOpenProbes: number
  /** Successful probes that close a half-open circuit (at most `halfOpenProbes`). Default 1. */
  halfOpenSuccesses?: number
  maxHalfOpenMs: number
}

/** The pure breaker: no I/O, no timers, no clock of its own; every method takes `now` and returns new state. */
export interface BreakerMachine {
  readonly initial: BreakerState
  /** Lets a call in, or refuses it. Moves open to half-open on the first call after the cooldown. */
  admit(state: BreakerState | undefined, now: number): Admission
  /** The admission of a call to a closed circuit, which needs no time; `undefined` when the circuit is not closed. */
  admitClosed(state: BreakerState | undefined): Admission | undefined
  /** True when settling this outcome would change nothing and decide nothing, so it needs neither time nor a write. */
  quiet(state: BreakerState | undefined, ticket: Ticket, outcome: Outcome): boolean
  /** Applies the outcome of an admitted call, with what a failure said about itself. */
  settle(state: BreakerState | undefined, ticket: Ticket, outcome: Outcome, now: number, failure?: FailureFacts): Settlement
  /** Milliseconds until an open circuit half-opens (0 when it may now); `undefined` when not open. */
  remainingMs(state: BreakerState, now: number): number | undefined
  /** True when `value` (read back from a checkpoint) is a state this machine can use. */
  isState(value: Json | undefined): value is BreakerState
}

const NONE: readonly Transition[] = Object.freeze([])
// A retry layer makes at most 6 requests per call (its hard ceiling); more is a caller's mistake, counted as 6.
const MAX_ATTEMPTS = 6
const attemptsOf = (n: number) => (Number.isInteger(n) && n >= 1 ? n : 1)

/** An admitted call as it settles: how it went, when, and what its failure said. */
interface Settling extends FailureFacts {
  readonly outcome: Outcome
  readonly now: number
  readonly attempts: number
}

/** A machine's validated config, with what it derives once: every transition below reads it. */
interface Machine extends BreakerMachineConfig {
  /** Successful probes that close a half-open circuit. */
  readonly needed: number
  readonly initial: BreakerState
}

/**
 * Builds the breaker's state machine from validated options.
 *
 * @example
 * const machine = breakerMachine({ policy: consecutive({ threshold: 2 }), cooldownMs: 30_000, cooldownGrowth: 1,
 *   maxCooldownMs: 300_000, halfOpenProbes: 1, maxHalfOpenMs: 60_000 })
 * // close only after 3 successful probes, 5 let through at most, reopen on the first failure:
 * breakerMachine({ ...config, halfOpenProbes: 5, halfOpenSuccesses: 3 })
 * const a = machine.admit(undefined, 0) // { pass: true, probe: 0, ... }
 * const s = machine.settle(a.state, a, 'failure', 5).state
 */
export function breakerMachine(config: BreakerMachineConfig): BreakerMachine {
  const { policy, halfOpenProbes } = config
  const needed = config.halfOpenSuccesses ?? 1
  if (!Number.isInteger(needed) || needed < 1 || needed > halfOpenProbes) {
    throw new RangeError(`halfOpenSuccesses must be a whole number from 1 to halfOpenProbes (${halfOpenProbes}); got ${needed}`)
  }
  const initial: BreakerState = {
    circuit: 'closed',
    generation: 0,
    counts: policy.initial(),
    failures: 0,
    openedAt: 0,
    openMs: 0,
    opens: 0,
    probes: [],
    seq: 0,
  }
  const m: Machine = { ...config, needed, initial }
  return {
    initial,
    admitClosed: (stored) => admitClosed(m, stored),
    quiet: (stored, ticket, outcome) => quiet(m, stored, ticket, outcome),
    admit: (stored, now) => admitClosed(m, stored) ?? admitNotClosed(m, stored as BreakerState, now),
    settle(stored, ticket, outcome, now, failure) {
      const state = stored === undefined ? initial : rebase(m, stored, now)
      const settling: Settling = { outcome, now, retryAfterMs: failure?.retryAfterMs, attempts: failure?.attempts ?? 1 }
      return ticket.probe === 0 ? settleClosed(m, state, ticket, settling) : settleProbe(m, state, ticket, settling)
    },
    remainingMs: (state, now) => remainingMs(m, state, now),
    isState: (value): value is BreakerState => isStateOf(policy, value),
  }
}

// Successes of the trial so far. Anything else in `counts` (a state from before the trial, a K of 1,
// garbage from a store) counts as none, so only real successes close the circuit. A tally past this
// breaker's K (written by a worker configured for more) counts as K - 1: the next success closes.
const successesOf = (m: Machine, state: BreakerState): number =>
  isTally(state.counts) ? Math.min(state.counts.probeSuccesses, m.needed - 1) : 0

// A time later than `now` was written under another clock (a checkpoint from another process):
// restart the cooldown from now rather than stay open for however far apart the clocks are.
function rebase(m: Machine, state: BreakerState, now: number): BreakerState {
  // Only a closed circuit's counts are the policy's (an open one's are fresh, a half-open one's may be the tally).
  const counts = state.circuit === 'closed' ? m.policy.rebase(state.counts, now) : state.counts
  const future = state.openedAt > now || state.probes.some(([, at]) => at > now)
  if (!future) return counts === state.counts ? state : { ...state, counts }
  return { ...state, counts, openedAt: Math.min(state.openedAt, now), probes: [] }
}

function open(m: Machine, state: BreakerState, failures: number, now: number, retryAfterMs: number | undefined): BreakerState {
  const opens = state.opens + 1
  const cooldown = Math.min(m.maxCooldownMs, m.cooldownMs * m.cooldownGrowth ** (opens - 1))
  // A server that said how long to back off knows better than the default cooldown.
  const pushback = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, m.maxCooldownMs)
  return {
    ...state,
    circuit: 'open',
    generation: state.generation + 1,
    counts: m.policy.initial(),
    failures,
    openedAt: now,
    openMs: Math.ceil(Math.max(cooldown, pushback)),
    opens,
    probes: [],
  }
}

function refuse(state: BreakerState, retryAfterMs: number | undefined, changes: readonly Transition[], expired: number): Admission {
  return { pass: false, state, generation: state.generation, probe: 0, retryAfterMs, changes, expired }
}

function admitClosed(m: Machine, stored: BreakerState | undefined): Admission | undefined {
  const state = stored ?? m.initial
  if (state.circuit !== 'closed') return undefined
  return { pass: true, state, generation: state.generation, probe: 0, retryAfterMs: undefined, changes: NONE, expired: 0 }
}

function quiet(m: Machine, stored: BreakerState | undefined, ticket: Ticket, outcome: Outcome): boolean {
  if (ticket.probe !== 0) return false
  if (outcome === 'neutral') return true
  const state = stored ?? m.initial
  return (
    outcome === 'success' && state.circuit === 'closed' && state.generation === ticket.generation && m.policy.idle?.(state.counts) === true
  )
}

/** Admitting to an open or half-open circuit: refused while cooling down, then a probe while a half-open slot is free. */
function admitNotClosed(m: Machine, stored: BreakerState, now: number): Admission {
  // Admitting to a closed circuit needs no time, so a state from another clock is rebased when it settles.
  let state = rebase(m, stored, now)
  let changes = NONE
  if (state.circuit === 'open') {
    const remaining = state.openedAt + cooldownOf(m, state) - now
    if (remaining > 0) return refuse(state, remaining, NONE, 0)
    state = { ...state, circuit: 'half-open', probes: [] }
    changes = [{ from: 'open', to: 'half-open', reason: `cooldown of ${cooldownOf(m, state)} ms elapsed` }]
  }
  const held = state.probes.filter(([, at]) => now - at < m.maxHalfOpenMs)
  const expired = state.probes.length - held.length
  // A successful probe keeps its place in the trial: at most halfOpenProbes are let through until it ends.
  if (held.length + successesOf(m, state) < m.halfOpenProbes) {
    const probe = state.seq + 1
    held.push([probe, now])
    state = { ...state, probes: held, seq: probe }
    return { pass: true, state, generation: state.generation, probe, retryAfterMs: undefined, changes, expired }
  }
  if (expired > 0) state = { ...state, probes: held }
  const oldest = Math.min(...held.map(([, at]) => at))
  return refuse(state, held.length === 0 ? undefined : oldest + m.maxHalfOpenMs - now, changes, expired)
}

/** A call admitted to a closed circuit settles: the policy counts it, and may open the circuit. */
function settleClosed(m: Machine, state: BreakerState, ticket: Ticket, { outcome, now, retryAfterMs, attempts }: Settling): Settlement {
  const verdict = outcome !== 'neutral'
  if (state.circuit !== 'closed' || state.generation !== ticket.generation) return { state, change: undefined, stale: verdict }
  if (!verdict) return { state, change: undefined, stale: false }
  const { policy } = m
  let counts = policy.record(state.counts, outcome === 'failure', now)
  // Every failed request counts, not only the logical call: a dead tool opens the circuit after `threshold` requests.
  if (outcome === 'failure')
    for (let more = Math.min(attemptsOf(attempts), MAX_ATTEMPTS) - 1; more > 0; more--) counts = policy.record(counts, true, now)
  if (counts === state.counts) return { state, change: undefined, stale: false }
  const reason = outcome === 'failure' ? policy.shouldOpen(counts, now) : undefined
  if (reason === undefined) return { state: { ...state, counts }, change: undefined, stale: false }
  return {
    state: open(m, state, policy.failures(counts, now), now, retryAfterMs),
    change: { from: 'closed', to: 'open', reason },
    stale: false,
  }
}

/** A half-open probe settles: a success counts toward closing, a failure reopens, a neutral outcome frees its slot. */
function settleProbe(m: Machine, state: BreakerState, ticket: Ticket, { outcome, now, retryAfterMs }: Settling): Settlement {
  const slot = state.probes.findIndex(([id]) => id === ticket.probe)
  const held = slot >= 0 && state.circuit === 'half-open' && now - (state.probes[slot] as [number, number])[1] < m.maxHalfOpenMs
  if (!held || state.generation !== ticket.generation) return { state, change: undefined, stale: outcome !== 'neutral' }
  if (outcome === 'neutral') {
    return { state: { ...state, probes: state.probes.filter((_, i) => i !== slot) }, change: undefined, stale: false }
  }
  if (outcome === 'success') return probeSucceeded(m, state, slot)
  // Anything else is a failure: the probe failed, so the circuit opens again.
  return {
    state: open(m, state, state.failures + 1, now, retryAfterMs),
    change: { from: 'half-open', to: 'open', reason: 'probe failed' },
    stale: false,
  }
}

/** A successful probe: the trial's tally grows, and the `needed`-th success closes the circuit. */
function probeSucceeded(m: Machine, state: BreakerState, slot: number): Settlement {
  const { needed } = m
  const successes = successesOf(m, state) + 1
  if (successes < needed) {
    const probes = state.probes.filter((_, i) => i !== slot)
    return {
      state: { ...state, counts: { probeSuccesses: successes }, probes },
      change: undefined,
      stale: false,
      trial: { successes, needed },
    }
  }
  return {
    state: { ...state, circuit: 'closed', counts: m.policy.initial(), failures: 0, opens: 0, probes: [] },
    change: { from: 'half-open', to: 'closed', reason: needed === 1 ? 'probe succeeded' : `${needed} probes succeeded` },
    stale: false,
  }
}

/**
 * How long an opening stays open, held to this breaker's `maxCooldownMs`: a state read from a shared
 * store (another worker's configuration, a script or a clock gone wrong) may say 1e12 or `Infinity`,
 * and no opening this breaker makes is longer. A cooldown that is no wait at all (`NaN`, negative)
 * reads as the longest, the side that never lets a storm through early.
 */
function cooldownOf(m: Machine, state: BreakerState): number {
  return Math.min(waitMsOf(state.openMs) ?? m.maxCooldownMs, m.maxCooldownMs)
}

function remainingMs(m: Machine, state: BreakerState, now: number): number | undefined {
  if (state.circuit !== 'open') return undefined
  // An opening stamped later than now came from another clock; admit() restarts its cooldown.
  if (state.openedAt > now) return cooldownOf(m, state)
  return Math.max(0, state.openedAt + cooldownOf(m, state) - now)
}
