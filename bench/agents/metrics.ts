/** Episode results folded into the figures the table, the JSON and the chart show. */
import type { EpisodeResult } from './episode.js'

export interface Summary {
  readonly contender: string
  readonly runs: number
  /** Shares of runs, 0–1. */
  readonly success: number
  readonly cleanSuccess: number
  readonly duplicated: number
  readonly failedWithEffect: number
  readonly stopped: number
  readonly crashed: number
  readonly hung: number
  /** Sums over all runs. */
  readonly duplicateEffects: number
  readonly toolExecutions: number
  readonly modelRequests: number
  /** Virtual seconds. */
  readonly meanS: number
  readonly p50s: number
  readonly p95s: number
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number
}

export function summarize(contender: string, results: ReadonlyArray<Omit<EpisodeResult, 'trace'>>): Summary {
  const runs = results.length
  const share = (test: (r: Omit<EpisodeResult, 'trace'>) => boolean) => (runs === 0 ? 0 : results.filter(test).length / runs)
  const times = results.map((r) => r.virtualMs / 1000).sort((a, b) => a - b)
  return {
    contender,
    runs,
    success: share((r) => r.status === 'success'),
    cleanSuccess: share((r) => r.clean),
    duplicated: share((r) => r.duplicates > 0),
    failedWithEffect: share((r) => r.status !== 'success' && r.effects > 0),
    stopped: share((r) => r.status === 'stopped'),
    crashed: share((r) => r.status === 'crashed'),
    hung: share((r) => r.status === 'hung'),
    duplicateEffects: results.reduce((sum, r) => sum + r.duplicates, 0),
    toolExecutions: results.reduce((sum, r) => sum + r.toolExecutions, 0),
    modelRequests: results.reduce((sum, r) => sum + r.modelRequests, 0),
    meanS: runs === 0 ? 0 : times.reduce((sum, t) => sum + t, 0) / runs,
    p50s: quantile(times, 0.5),
    p95s: quantile(times, 0.95),
  }
}
