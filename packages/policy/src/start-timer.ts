import type { Clock } from '@shallot/core'

const noop = () => {}
const CANCELLED = Symbol('timer cancelled')

/**
 * Calls `onExpire` once `ms` have passed on `clock`, unless the returned function is called first.
 * Either way nothing is left behind: no timer, no listener.
 *
 * A clock with the optional `timer` fast path (the system clock, manualClock) is used directly,
 * because cancelling `clock.sleep` needs an AbortSignal, and creating one costs more than the rest
 * of the layer on the happy path. Any other clock goes
 * through `clock.sleep` with a private controller, so virtual time still works.
 */
export function startTimer(clock: Clock, ms: number, onExpire: () => void): () => void {
  if (clock.timer !== undefined) return clock.timer(ms, onExpire)
  const controller = new AbortController()
  clock.sleep(ms, controller.signal).then(onExpire, noop)
  // A reason of our own: aborting without one allocates a DOMException with a stack trace.
  return () => controller.abort(CANCELLED)
}
