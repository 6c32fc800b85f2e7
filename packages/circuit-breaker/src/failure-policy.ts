import type { Json } from '@shallot/core'

/**
 * Decides, from the verdicts of calls while the circuit is closed, when it should open.
 * A policy is pure: it holds no state of its own; its counts are plain JSON kept in the breaker's
 * state (so a run-scoped breaker checkpoints them) and every method returns new counts.
 *
 * @example
 * const policy: FailurePolicy = consecutive({ threshold: 3 })
 * let counts = policy.initial()
 * counts = policy.record(counts, true, clock.now())
 * policy.shouldOpen(counts, clock.now()) // undefined: one failure is not three
 */
export interface FailurePolicy<Counts extends Json = Json> {
  /** `consecutive`, `sampling`, or a name of your own; shown in logs. */
  readonly kind: string
  /** The counts of a freshly closed circuit. */
  initial(): Counts
  /** True when `value` (read back from a checkpoint) is counts this policy made. */
  isCounts(value: Json): value is Counts
  /** The counts after one verdict at `now`. Returns `counts` itself when nothing changed, so nothing is written. */
  record(counts: Counts, failed: boolean, now: number): Counts
  /**
   * Optional: true when a success would leave `counts` unchanged whenever it happened. Lets the
   * breaker skip the clock and the store on the happy path; leave it out when unsure.
   */
  idle?(counts: Counts): boolean
  /** Why the circuit should open now ("2 consecutive failures"), or `undefined` to stay closed. */
  shouldOpen(counts: Counts, now: number): string | undefined
  /** How many failures the counts hold at `now`: the N in "open after N failures". */
  failures(counts: Counts, now: number): number
  /**
   * The counts with no time later than `now`. Times later than `now` can only come from another
   * clock (a checkpoint written by another process); move them back so they keep their relative ages.
   */
  rebase(counts: Counts, now: number): Counts
}
