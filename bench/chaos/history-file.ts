// The file a failing soak leaves: its seed and shape (which replay its schedule), the schedule itself
// (so a replay can tell that the generator changed since), the anomalies by kind and the history.
import { readFileSync, writeFileSync } from 'node:fs'
import type { Anomaly, History } from './checker.js'
import { type Schedule, type SoakShape, soakSchedule } from './schedule.js'

const VERSION = 1

export interface HistoryFile {
  readonly version: number
  readonly shape: SoakShape
  readonly schedule: Schedule
  readonly anomalies: readonly Anomaly[]
  readonly history: Record<string, unknown>
}

/** Writes the file; Maps become arrays of entries. */
export function writeHistoryFile(
  path: string,
  file: {
    shape: SoakShape
    schedule: Schedule
    anomalies: readonly Anomaly[]
    history: History
    timelines: ReadonlyMap<string, readonly string[]>
  },
): void {
  const { jobs, extraJobs, outcomes, ...rest } = file.history
  const history = { ...rest, jobs: [...jobs], extraJobs: [...extraJobs], outcomes: [...outcomes], timelines: [...file.timelines] }
  const body: HistoryFile = { version: VERSION, shape: file.shape, schedule: file.schedule, anomalies: file.anomalies, history }
  writeFileSync(path, `${JSON.stringify(body)}\n`)
}

/**
 * The shape a history file replays. Its schedule is drawn again from the seed and must be the one
 * the file holds: a generator that changed since would replay another soak under the same seed.
 *
 * @example
 * const shape = replayShape('chaos-history-s7.json') // then runSoak({ ...shape, … })
 */
export function replayShape(path: string): SoakShape {
  let file: HistoryFile
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as HistoryFile
  } catch (err) {
    throw new Error(`--replay: cannot read the history file ${path} (${(err as Error).message})`)
  }
  if (file?.version !== VERSION || typeof file.shape?.seed !== 'number') {
    throw new Error(`--replay: ${path} is not a chaos history file of version ${VERSION}`)
  }
  if (JSON.stringify(soakSchedule(file.shape)) !== JSON.stringify(file.schedule)) {
    throw new Error(
      `--replay: the schedule drawn from seed ${file.shape.seed} is not the one in ${path}; the soak's schedule generator changed since it was written`,
    )
  }
  return file.shape
}
