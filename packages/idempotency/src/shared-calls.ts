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

/**
 * Calls in flight in this process, per store key, so duplicates wait instead of polling the store.
 * Read and written like a `Map`. Most calls are alone in flight, so the first is held in a slot of
 * its own and only the others in a map: a map whose one entry comes and goes call after call keeps
 * rebuilding its table (V8 rehashes once deleted entries fill it), which a lone call need not pay.
 */
export class SharedCalls {
  #key: string | undefined = undefined
  #flight: InFlight | undefined = undefined
  readonly #others = new Map<string, InFlight>()

  get(key: string): InFlight | undefined {
    if (this.#key === key) return this.#flight
    return this.#others.size === 0 ? undefined : this.#others.get(key)
  }

  set(key: string, flight: InFlight): void {
    // A key is held in the slot or in the map, never both.
    if (this.#key === key || (this.#key === undefined && !(this.#others.size !== 0 && this.#others.has(key)))) {
      this.#key = key
      this.#flight = flight
      return
    }
    this.#others.set(key, flight)
  }

  delete(key: string): void {
    if (this.#key === key) {
      this.#key = undefined
      this.#flight = undefined
      return
    }
    if (this.#others.size !== 0) this.#others.delete(key)
  }
}

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
    calls = new SharedCalls()
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
