import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { FailurePolicy } from './failure-policy.js'

/** Options of {@link sampling}. */
export const samplingOptionsSchema = z
  .strictObject({
    /** Share of failed calls in the window that opens the circuit, in (0, 1]. Default 0.5. */
    failureRatio: z.number().gt(0).max(1).default(0.5),
    /** Fewest calls in the window before the ratio means anything. Default 10. */
    minimumThroughput: z.number().int().min(1).default(10),
    /** Length of the sliding window, by the monotonic clock. Default 60,000 ms. */
    windowMs: z.number().int().positive().default(60_000),
    /** How many slices the window is cut into; old slices drop out whole. Default 10. */
    buckets: z.number().int().min(1).max(1000).default(10),
  })
  .refine((o) => o.windowMs >= o.buckets, { message: 'must be at least buckets (one millisecond per bucket)', path: ['windowMs'] })

export type SamplingOptions = z.input<typeof samplingOptionsSchema>

const parseSamplingOptions = optionsParser('sampling()', samplingOptionsSchema)

/** One slice of the window: `[startedAt, successes, failures]`. */
export type SamplingBucket = [number, number, number]

/** The counts of {@link sampling}: the window's slices, oldest first. */
export type SamplingCounts = { buckets: SamplingBucket[] }

const EMPTY: SamplingCounts = Object.freeze({ buckets: [] }) as unknown as SamplingCounts

function isBucket(value: unknown): value is SamplingBucket {
  return Array.isArray(value) && value.length === 3 && value.every((n) => typeof n === 'number' && Number.isFinite(n))
}

/**
 * Opens the circuit when at least `failureRatio` of the calls in the last `windowMs` failed, once
 * the window holds `minimumThroughput` calls. The window is bucketed and slides with the injected
 * monotonic clock; no timer ever runs.
 *
 * @example
 * circuitBreaker({ policy: sampling({ failureRatio: 0.5, minimumThroughput: 20, windowMs: 30_000 }) })
 */
export function sampling(options?: SamplingOptions): FailurePolicy<SamplingCounts> {
  const { failureRatio, minimumThroughput, windowMs, buckets } = parseSamplingOptions(options)
  const bucketMs = windowMs / buckets

  const live = (counts: SamplingCounts, now: number): SamplingBucket[] => {
    const list = counts.buckets
    let first = 0
    while (first < list.length && (list[first] as SamplingBucket)[0] <= now - windowMs) first++
    return first === 0 ? list : list.slice(first)
  }

  const totals = (counts: SamplingCounts, now: number): [number, number] => {
    let calls = 0
    let failed = 0
    for (const [, ok, bad] of live(counts, now)) {
      calls += ok + bad
      failed += bad
    }
    return [calls, failed]
  }

  return {
    kind: 'sampling',
    initial: () => EMPTY,
    isCounts: (value): value is SamplingCounts =>
      typeof value === 'object' && value !== null && !Array.isArray(value) && Array.isArray(value.buckets) && value.buckets.every(isBucket),
    record(counts, failed, now) {
      const list = live(counts, now)
      const last = list[list.length - 1]
      if (last !== undefined && now < last[0] + bucketMs) {
        const next = list.slice(0, -1)
        next.push([last[0], last[1] + (failed ? 0 : 1), last[2] + (failed ? 1 : 0)])
        return { buckets: next }
      }
      const next = list === counts.buckets ? list.slice() : list
      next.push([now, failed ? 0 : 1, failed ? 1 : 0])
      return { buckets: next }
    },
    shouldOpen(counts, now) {
      const [calls, failed] = totals(counts, now)
      if (calls < minimumThroughput || failed / calls < failureRatio) return undefined
      return `${failed} of ${calls} calls failed in the last ${windowMs} ms (failure ratio ${+(failed / calls).toFixed(3)} >= ${failureRatio})`
    },
    failures: (counts, now) => totals(counts, now)[1],
    rebase(counts, now) {
      const newest = counts.buckets[counts.buckets.length - 1]
      if (newest === undefined || newest[0] <= now) return counts
      const shift = now - newest[0]
      return { buckets: counts.buckets.map(([at, ok, bad]): SamplingBucket => [at + shift, ok, bad]) }
    },
  }
}
