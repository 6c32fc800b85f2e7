import type { Clock } from './types.js'

const noop = () => {}
// A reason of our own: aborting without one allocates a DOMException with a stack trace.
const CANCELLED = Symbol('timer cancelled')

/**
 * Calls `onExpire` once `ms` have passed on `clock`, unless the returned function is called first.
 * Either way nothing is left behind: no timer, no listener.
 *
 * A clock with the optional `timer` fast path (the system clock, manualClock) is used directly,
 * because cancelling `clock.sleep` needs an AbortSignal, and creating one costs more than the rest
 * of a call's happy path (docs/benchmarks.md#decision-111). Any other clock goes through
 * `clock.sleep` with a private controller, so virtual time still works.
 *
 * @example
 * const cancel = startTimer(ctx.clock, 2_000, () => attempt.expire())
 */
export function startTimer(clock: Clock, ms: number, onExpire: () => void): () => void {
  if (clock.timer !== undefined) return clock.timer(ms, onExpire)
  const controller = new AbortController()
  clock.sleep(ms, controller.signal).then(onExpire, noop)
  return () => controller.abort(CANCELLED)
}
