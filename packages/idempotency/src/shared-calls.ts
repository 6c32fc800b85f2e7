import type { ToolError } from '@shallot/core'
import { SingleFlight } from '@shallot/core/kit'
import type { IdempotencyStore } from './idempotency-store.js'

/**
 * How a call that others waited for ended: a success (its value as JSON text, `undefined` for no
 * value), or a refusal before the tool ran (conflict, outcome_unknown, …) that identical waiters share.
 * A call that ran and failed shares nothing (`undefined`): waiters go back to the store, which knows
 * what it recorded.
 */
export type SharedOutcome =
  | { readonly argsHash: string; readonly ok: true; readonly json: string | undefined }
  | { readonly argsHash: string; readonly ok: false; readonly refusal: ToolError }

/** Calls in flight in this process, by store key, so duplicates wait instead of polling the store. */
export type SharedCalls = SingleFlight<SharedOutcome | undefined>

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
    calls = new SingleFlight()
    registry.set(store, calls)
  }
  return calls
}
