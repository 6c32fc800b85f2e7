import type { Clock } from './types.js'

/**
 * The longest delay a JavaScript timer holds: 2^31 − 1 ms, about 24.8 days. Node fires a longer one
 * at once (after a warning), so an option that becomes a timer is bounded by this.
 *
 * @example
 * z.number().int().positive().max(MAX_TIMER_MS)
 */
export const MAX_TIMER_MS = 2_147_483_647

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
