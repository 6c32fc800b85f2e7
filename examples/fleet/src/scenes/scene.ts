import type { FleetWorker } from '../fleet.js'
import type { PrivateRedis } from '../private-redis.js'
import type { WorkerConfig } from '../protocol.js'

/** What every scene gets: the running fleet, its Redis and the world's effects file. */
export interface SceneContext {
  readonly workers: readonly FleetWorker[]
  readonly redis: PrivateRedis
  readonly config: WorkerConfig
}

/** One measured line of the report. */
export type Figure = readonly [label: string, value: string | number]

/** A scene's title and what it measured. */
export interface SceneReport {
  readonly title: string
  readonly figures: readonly Figure[]
}

/** The `p`-th percentile (0–100) of `values`, in the same unit. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
}

export const ms = (n: number): string => `${n.toFixed(1)} ms`
