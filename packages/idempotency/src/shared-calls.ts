import { abortReason, type ToolError } from '@shallot/core'
import type { IdempotencyStore } from './idempotency-store.js'

/**
 * How a call that others waited for ended: a success (its value as JSON text, `undefined` for no
 * value), or a refusal before the tool ran (conflict, outcome_unknown, …) that identical waiters share.
 * A call that ran and failed shares nothing: waiters go back to the store, which knows what it recorded.
 */
export type SharedOutcome =
  | { readonly argsHash: string; readonly ok: true; readonly json: string | undefined }
  | { readonly argsHash: string; readonly ok: false; readonly refusal: ToolError }

/**
 * One call in flight in this process. Its promise exists only once a duplicate waits for it: most
 * calls have no duplicate, and they pay for no promise.
 */
export interface InFlight {
  /** Set by the leader before it settles; what waiters see. */
  outcome: SharedOutcome | undefined
  promise: Promise<SharedOutcome | undefined> | undefined
  resolve: ((outcome: SharedOutcome | undefined) => void) | undefined
}

/** Calls in flight in this process, per store key, so duplicates wait instead of polling the store. */
export type SharedCalls = Map<string, InFlight>

/**
 * A fresh entry for a call the caller now leads.
 *
 * @example
 * calls.set(storeKey, inFlight())
 */
export function inFlight(): InFlight {
  return { outcome: undefined, promise: undefined, resolve: undefined }
}

/**
 * The leader is done: whoever waits sees its outcome.
 *
 * @example
 * flight.outcome = { argsHash, ok: true, json }
 * landed(flight)
 */
export function landed(flight: InFlight): void {
  flight.resolve?.(flight.outcome)
}

/**
 * Whether a duplicate waits for this call. Waiters can join only while the leader is suspended, so
 * once the leader is past its last await the answer is final, and an outcome nobody waits for need
 * not be built (for a replay, not serialised).
 *
 * @example
 * if (awaited(flight)) flight.outcome = { argsHash, ok: true, json }
 */
export function awaited(flight: InFlight): boolean {
  return flight.promise !== undefined
}

function promiseOf(flight: InFlight): Promise<SharedOutcome | undefined> {
  flight.promise ??= new Promise((resolve) => {
    flight.resolve = resolve
  })
  return flight.promise
}

const registry = new WeakMap<IdempotencyStore, SharedCalls>()

/**
 * The in-process table of calls in flight for `store`. Shared by every middleware that uses the
 * same store object, so two stacks of one process also wait for each other.
 *
 * @example
 * const calls = sharedCalls(store)
 * const running = calls.get(storeKey)
 */
export function sharedCalls(store: IdempotencyStore): SharedCalls {
  let calls = registry.get(store)
  if (calls === undefined) {
    // One entry stays for good, under '' (no store key is empty: it is scope, space, key). V8 gives
    // a Map a new table each time its last entry is deleted, and most calls are alone in flight:
    // without it, every call would allocate a table and throw it away.
    calls = new Map([['', inFlight()]])
    registry.set(store, calls)
  }
  return calls
}

/**
 * Waits for an in-flight call to settle (it never fails), or rejects with the abort reason as soon
 * as `signal` aborts. The listener is removed on both paths.
 *
 * @example
 * const outcome = await waitFor(calls.get(storeKey)!, ctx.signal)
 */
export function waitFor(flight: InFlight, signal: AbortSignal): Promise<SharedOutcome | undefined> {
  if (signal.aborted) return Promise.reject(abortReason(signal))
  const running = promiseOf(flight)
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal))
    signal.addEventListener('abort', onAbort, { once: true })
    void running.then((value) => {
      signal.removeEventListener('abort', onAbort)
      resolve(value)
    })
  })
}
