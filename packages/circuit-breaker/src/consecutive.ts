import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { FailurePolicy } from './failure-policy.js'

/** Options of {@link consecutive}. */
export const consecutiveOptionsSchema = z.strictObject({
  /** Failures in a row that open the circuit. Default 5. */
  threshold: z.number().int().min(1).max(1_000_000).default(5),
})

export type ConsecutiveOptions = z.input<typeof consecutiveOptionsSchema>

const parseConsecutiveOptions = optionsParser('consecutive()', consecutiveOptionsSchema)

/** The counts of {@link consecutive}: failures since the last success. */
export type ConsecutiveCounts = { failures: number }

const ZERO: ConsecutiveCounts = Object.freeze({ failures: 0 }) as ConsecutiveCounts

/**
 * Opens the circuit after `threshold` failures in a row; any success resets the count.
 * The classic breaker (Polly's `ConsecutiveFailureBreaker`, cockatiel's `ConsecutiveBreaker`).
 *
 * @example
 * circuitBreaker({ policy: consecutive({ threshold: 2 }) })
 */
export function consecutive(options?: ConsecutiveOptions): FailurePolicy<ConsecutiveCounts> {
  const { threshold } = parseConsecutiveOptions(options)
  return {
    kind: 'consecutive',
    initial: () => ZERO,
    isCounts: (value): value is ConsecutiveCounts =>
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Number.isInteger(value.failures) &&
      (value.failures as number) >= 0,
    idle: (counts) => counts.failures === 0,
    record: (counts, failed) => (failed ? { failures: counts.failures + 1 } : counts.failures === 0 ? counts : ZERO),
    shouldOpen: (counts) => (counts.failures >= threshold ? `${counts.failures} consecutive failures` : undefined),
    failures: (counts) => counts.failures,
    rebase: (counts) => counts,
  }
}
