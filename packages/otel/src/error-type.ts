import { modelFailureCode } from '@shallot/core/kit'

/**
 * `error.type` of a failure: a shallot code or kind, an HTTP status, a Node error code, or the
 * error's class name. Never its message: that may hold a secret and has unbounded cardinality.
 * Core's classification, so a wrapper's span and the agent's `model.call` event name a failure alike.
 */
export function errorTypeOf(err: unknown): string {
  return modelFailureCode(err)
}
