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
