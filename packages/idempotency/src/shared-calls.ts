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

/** Calls in flight in this process, per store key, so duplicates wait instead of polling the store. */
export type SharedCalls = Map<string, Promise<SharedOutcome | undefined>>

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
    calls = new Map()
    registry.set(store, calls)
  }
  return calls
}

/**
 * Waits for an in-flight call to settle (its promise never rejects), or rejects with the
 * abort reason as soon as `signal` aborts. The listener is removed on both paths.
 *
 * @example
 * const outcome = await waitFor(calls.get(storeKey)!, ctx.signal)
 */
export function waitFor<T>(running: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal))
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal))
    signal.addEventListener('abort', onAbort, { once: true })
    void running.then((value) => {
      signal.removeEventListener('abort', onAbort)
      resolve(value)
    })
  })
}
