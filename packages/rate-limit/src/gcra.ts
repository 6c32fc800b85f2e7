// The Generic Cell Rate Algorithm, pure: no clock, no I/O. The memory store runs it in-process; the Redis
// script and the PostgreSQL statement are the same arithmetic, written in Lua and SQL.

/**
 * One limit as a store applies it: a call every `intervalMs` on average, `burst` at once from rest, and
 * a call may reserve a place up to `maxWaitMs` ahead instead of being refused.
 */
export interface RateRule {
  /** The emission interval: `perMs / limit`. */
  readonly intervalMs: number
  /** Calls admitted at once after a quiet spell (≥ 1). */
  readonly burst: number
  /** The longest wait a call may reserve; past it the call is refused. */
  readonly maxWaitMs: number
}

/**
 * A store's answer. Admitted: the call may go after `waitMs` (0: at once), and its place is taken.
 * Refused: nothing was taken, and a call made `waitMs` from now would be admitted without waiting.
 */
export interface RateDecision {
  readonly admitted: boolean
  readonly waitMs: number
  /**
   * Admitted with a wait, from a store that can give a place back: what its `refund` needs (the layer
   * hands it back as it came). Absent otherwise: a store without `refund` never sets it.
   */
  readonly reservation?: RateReservation
}

/**
 * Who holds a reserved place, as the store that reserved it knows it: the key's TAT right after the
 * reservation (it came due at `tat − burst × intervalMs`) and the key's refund sequence then. A refund
 * finds the key still at both only when no call was admitted behind the reservation since, and no
 * refund-then-admit happened in between (which would move the sequence on).
 */
export interface RateReservation {
  readonly tat: number
  readonly seq: number
}

/** What {@link gcra} answers: the decision and the key's new theoretical arrival time. */
export interface GcraStep extends RateDecision {
  /** The key's new TAT (unchanged when refused). */
  readonly tat: number
}

/**
 * One GCRA decision. `tat` is the key's theoretical arrival time (undefined or anything not finite: a
 * key at rest). A call may go once `now ≥ max(tat, now) − (burst − 1) × intervalMs`; a later time
 * within `maxWaitMs` is reserved (the TAT moves on by one interval, so the next caller queues behind
 * it), a later one refused without a change. Admitted calls are spaced `intervalMs` apart after the
 * burst, whichever process asks, as long as one store answers them in order.
 *
 * @example
 * gcra(undefined, 0, { intervalMs: 100, burst: 1, maxWaitMs: 0 }) // { admitted: true, waitMs: 0, tat: 100 }
 * gcra(100, 0, { intervalMs: 100, burst: 1, maxWaitMs: 0 }) // { admitted: false, waitMs: 100, tat: 100 }
 */
export function gcra(tat: number | undefined, now: number, rule: RateRule): GcraStep {
  const from = tat !== undefined && Number.isFinite(tat) && tat > now ? tat : now
  const waitMs = Math.max(0, from - (rule.burst - 1) * rule.intervalMs - now)
  if (waitMs > rule.maxWaitMs) return { admitted: false, waitMs, tat: from }
  return { admitted: true, waitMs, tat: from + rule.intervalMs }
}

/**
 * The TAT a key returns to when the reservation that took it to `tat` is given back: one interval
 * earlier, never below `now` (a key at rest). That is exactly the key as it would be had the place
 * never been taken, so only the last reservation of a key (its TAT unchanged since) may be given
 * back, and only before it came due (`now < tat − burst × intervalMs`); anything else answers undefined.
 * A place in the middle of a queue cannot be given back: moving the TAT back would hand the queue's
 * last place out twice, over the limit.
 *
 * @example
 * gcraRefund(300, 300, 50, { intervalMs: 100, burst: 1, maxWaitMs: 500 }) // 200
 * gcraRefund(300, 400, 50, { intervalMs: 100, burst: 1, maxWaitMs: 500 }) // undefined: a call was admitted behind it
 */
export function gcraRefund(tat: number | undefined, reservedTat: number, now: number, rule: RateRule): number | undefined {
  if (tat === undefined || tat !== reservedTat || !(now < reservedTat - rule.burst * rule.intervalMs)) return undefined
  return Math.max(tat - rule.intervalMs, now)
}
