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

/**
 * Calls `onExpire` once `ms` have passed on `clock`, unless the returned function is called first.
 * Either way nothing is left behind: no timer, no listener.
 *
 * A clock that sets timers itself (`clock.timer`: the system clock, manualClock) is asked for one;
 * any other clock goes through `clock.sleep` with a private controller, so virtual time still works.
 *
 * @example
 * const cancel = startTimer(ctx.clock, 2_000, () => attempt.expire())
 */
export function startTimer(clock: Clock, ms: number, onExpire: () => void): () => void {
  if (clock.timer !== undefined) return clock.timer(ms, onExpire)
  const controller = new AbortController()
  clock.sleep(ms, controller.signal).then(onExpire, noop)
  // The sleep's rejection is dropped: a cancelled timer is no failure.
  return () => controller.abort()
}
