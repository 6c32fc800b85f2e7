import type { Json } from '@shallot/core'
import { Aborted, abortable } from './abortable.js'
import { type BoundedMap, boundedMap } from './bounded-map.js'
import type { BreakerMachine } from './breaker-machine.js'
import type { BreakerState } from './breaker-state.js'
import type { BreakerStore } from './breaker-store.js'
import type { BreakerHost, HomeCall, HomeOptions, StateHome, Step } from './home.js'

/** Successes one key holds before the next call writes them, however fresh the view. */
const MAX_HELD = 1000

/** What this worker knows of one key's shared state. */
interface View {
  /** The state the store last answered (`undefined`: nothing stored, a closed circuit). */
  state: BreakerState | undefined
  /** When the store last answered for this key (the stack's clock, read before asking): a closed circuit is trusted for `storeRefreshMs` after. */
  readAt: number
  /** A read in flight, which calls that find the view stale meanwhile wait for, and when it started. */
  reading: Promise<ReadOutcome> | undefined
  readingSince: number
  /** Successes of calls admitted to the closed circuit of generation `heldOf`, not written yet: the key's next write carries them. */
  held: number
  heldOf: number
}

/** One breaker's shared home: its machine, the store, how long a closed view is trusted, and the views. */
interface Shared {
  readonly machine: BreakerMachine
  readonly store: BreakerStore
  readonly refreshMs: number
  readonly views: BoundedMap<View>
}

/** One write to the store: the home, the call it is for, the key, its view, the change, and when it started. */
interface Write<R> {
  readonly s: Shared
  readonly ctx: BreakerHost
  readonly key: string
  readonly view: View
  readonly step: Step<R>
  readonly started: number
}

type Written<R> = R & { state: BreakerState }

/**
 * What a read of the store told the calls waiting for it: the state they may decide on (`decides`
 * false when only the store's own admission can tell), and the store's failure, if it failed.
 */
interface ReadOutcome {
  readonly decides: boolean
  readonly state?: BreakerState | undefined
  readonly failure?: unknown
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown })?.then === 'function'
// An age below zero is a time from another clock (stacks on different clocks sharing one layer): too old, not fresh.
const within = (age: number, refreshMs: number) => age >= 0 && age < refreshMs

/**
 * A shared store seen through a view in this process's memory (resilience4j's and Polly's closed-state
 * checks are local): a circuit the store showed closed less than `storeRefreshMs` ago admits calls
 * without asking it, and their successes are held and written with the key's next write. Failures,
 * and every call to a circuit seen open or half-open, go to the store at once, so the fleet opens
 * together and shares one probe. An opening written elsewhere reaches this worker on its first call
 * after the view's age passes `storeRefreshMs` (one read, shared by the calls that arrive meanwhile).
 * When the store fails, calls are decided on the view, and the store is asked again `storeRefreshMs` later.
 */
export function sharedHome(machine: BreakerMachine, o: HomeOptions & { readonly store: BreakerStore }): StateHome {
  const s: Shared = { machine, store: o.store, refreshMs: o.storeRefreshMs, views: boundedMap<View>(o.maxKeys) }
  return {
    admitClosed(ctx, key) {
      if (s.refreshMs === 0) return undefined
      const view = s.views.get(key)
      if (view === undefined || !within(ctx.clock.now() - view.readAt, s.refreshMs)) return undefined
      return machine.admitClosed(view.state)
    },
    admit(ctx, key, signal, step) {
      const view = viewOf(s, key)
      // A circuit seen open or half-open needs the store's own admission (the cooldown, the probe slots).
      if (s.refreshMs === 0 || (view.state !== undefined && view.state.circuit !== 'closed')) return apply(s, ctx, key, signal, step)
      return refresh(s, { ctx, key, view }, signal).then(
        (read) => (read.decides && machine.admitClosed(read.state)) || apply(s, ctx, key, signal, step),
      )
    },
    settleQuietly(_ctx, key, ticket, outcome) {
      if (ticket.probe !== 0) return false
      if (outcome === 'neutral') return true
      if (outcome === 'failure' || s.refreshMs === 0) return false
      const view = s.views.peek(key)
      const state = view?.state ?? machine.initial
      if (view === undefined || state.circuit !== 'closed' || state.generation !== ticket.generation) return false
      if (machine.quiet(state, ticket, outcome)) return true
      if (view.heldOf !== ticket.generation) {
        view.held = 0
        view.heldOf = ticket.generation
      }
      // Enough held: the next call finds the view stale and writes them.
      if (++view.held >= MAX_HELD) view.readAt = Number.NEGATIVE_INFINITY
      return true
    },
    apply: (ctx, key, signal, step) => apply(s, ctx, key, signal, step),
    peek: (_run, key) => s.views.peek(key)?.state,
  }
}

function viewOf(s: Shared, key: string): View {
  let view = s.views.get(key)
  if (view === undefined) {
    view = { state: undefined, readAt: Number.NEGATIVE_INFINITY, reading: undefined, readingSince: 0, held: 0, heldOf: 0 }
    s.views.set(key, view)
  }
  return view
}

// An answer from before the one the view holds is older news: it changes nothing.
function seen(view: View, state: BreakerState | undefined, at: number): void {
  if (at < view.readAt) return
  view.state = state
  view.readAt = at
}

function storeFailed(ctx: BreakerHost, key: string, err: unknown): void {
  ctx.log.warn({ key, err }, 'circuit breaker store failed; using local state')
  ctx.emit('circuit-breaker.store_error', { key, message: err instanceof Error ? err.message : String(err) })
}

/** `step`, after the view's held successes (taken out of the view), at the time the step runs. */
function withHeld<R>(s: Shared, ctx: HomeCall, view: View, step: Step<R>): Step<R> {
  if (view.held === 0) return step
  const ticket = { generation: view.heldOf, probe: 0 }
  const count = view.held
  view.held = 0
  return (current) => {
    const now = ctx.clock.now()
    const base = current ?? s.machine.initial
    let state = base
    for (let i = 0; i < count; i++) state = s.machine.settle(state, ticket, 'success', now).state
    return step(state === base ? current : state)
  }
}

function apply<R>(s: Shared, ctx: BreakerHost, key: string, signal: AbortSignal, step: Step<R>): Written<R> | Promise<Written<R>> {
  const view = viewOf(s, key)
  const w: Write<R> = { s, ctx, key, view, step: withHeld(s, ctx, view, step), started: ctx.clock.now() }
  let result: Written<R> | undefined
  let pending: BreakerState | Promise<BreakerState>
  try {
    pending = s.store.update(key, (current) => (result = w.step(current)).state)
  } catch (err) {
    return fallBack(w, err)
  }
  if (isPromise(pending)) return settleAsync(w, abortable(pending, signal), () => result)
  return written(w, pending, result)
}

/** Waits for the store's write (abortable on the caller's signal), then keeps it as {@link written} does. */
async function settleAsync<R>(w: Write<R>, pending: Promise<BreakerState>, result: () => Written<R> | undefined): Promise<Written<R>> {
  let state: BreakerState
  try {
    state = await pending
  } catch (err) {
    // The caller gave up while the store was thinking: end the call as the caller said.
    if (err instanceof Aborted) throw err.reason
    return fallBack(w, err)
  }
  return written(w, state, result())
}

function written<R>(w: Write<R>, state: BreakerState, result: Written<R> | undefined): Written<R> {
  if (result === undefined) return fallBack(w, new TypeError('store.update() resolved without calling change()'))
  seen(w.view, state, w.started)
  return result
}

// The store is down: decide this call on the view, which holds every state the store returned, and
// trust it until the next refresh, so a sick store costs one wait per storeRefreshMs, not one per call.
function fallBack<R>(w: Write<R>, err: unknown): Written<R> {
  storeFailed(w.ctx, w.key, err)
  const result = w.step(w.view.state)
  w.view.state = result.state
  w.view.readAt = Math.max(w.view.readAt, w.started)
  return result
}

/** The key a read is for: the call that started it, the key and its view. */
interface Reading {
  readonly ctx: BreakerHost
  readonly key: string
  readonly view: View
}

/**
 * Reads the key's shared state (writing the held successes, if any): a plain read, no lock and no
 * write otherwise. The view may decide when the store answered a well-formed state, or failed (the
 * view is all there is). An answer that is not a state this machine wrote is left to the store's own
 * admission, which hands it to the machine as a write would.
 */
async function read(s: Shared, { ctx, key, view }: Reading, started: number): Promise<ReadOutcome> {
  let state: BreakerState | undefined
  try {
    const flush = view.held > 0 ? withHeld(s, ctx, view, (current) => ({ state: current ?? s.machine.initial })) : undefined
    state = flush === undefined ? await s.store.get(key) : await s.store.update(key, (current) => flush(current).state)
  } catch (failure) {
    view.readAt = Math.max(view.readAt, started)
    return { decides: true, state: view.state, failure }
  }
  if (state !== undefined && !s.machine.isState(state as unknown as Json)) return { decides: false }
  seen(view, state, started)
  return { decides: true, state }
}

/**
 * The key's state read again, or the read another call started less than `storeRefreshMs` ago;
 * abortable on the caller's signal. Each call that waited reports a failed read as its own (a call
 * that gave up meanwhile has ended and hears nothing).
 */
async function refresh(s: Shared, r: Reading, signal: AbortSignal): Promise<ReadOutcome> {
  const { view } = r
  const now = r.ctx.clock.now()
  // A read that has not answered within storeRefreshMs is not waited for again: this call reads anew.
  if (view.reading === undefined || !within(now - view.readingSince, s.refreshMs)) {
    const reading = read(s, r, now).finally(() => {
      if (view.reading === reading) view.reading = undefined
    })
    view.reading = reading
    view.readingSince = now
  }
  let outcome: ReadOutcome
  try {
    outcome = await abortable(view.reading, signal)
  } catch (err) {
    throw err instanceof Aborted ? err.reason : err
  }
  if ('failure' in outcome) storeFailed(r.ctx, r.key, outcome.failure)
  return outcome
}
