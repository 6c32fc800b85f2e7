/**
 * The whole bench: every contender on every task, over N seeded episodes of the mixed fault schedule,
 * then the matrix (one fault kind at a time). Every contender meets the same schedules.
 */
import { CONTENDERS, type Contender } from './contenders/index.js'
import { startEndpoint } from './endpoint.js'
import { type EpisodeResult, runEpisode } from './episode.js'
import { ALL_FAULTS, type FaultKind, type FaultSchedule, hashSeed, mixedSchedule, singleFaultSchedule } from './faults.js'
import { type Summary, summarize } from './metrics.js'
import { TASKS, type Task } from './tasks.js'

export interface BenchOptions {
  readonly seed: number
  /** Mixed-schedule episodes per task and contender. */
  readonly episodes: number
  /** Episodes per fault kind, task and contender in the matrix (0: no matrix). */
  readonly matrixEpisodes: number
  readonly contenders?: readonly Contender[]
  /** The matrix's fault kinds; default every one. */
  readonly faults?: readonly FaultKind[]
  readonly tasks?: readonly Task[]
  readonly onProgress?: (done: number, total: number) => void
}

export type EpisodeRecord = Omit<EpisodeResult, 'trace'> & { readonly schedule: string; readonly episode: number }

export interface BenchResult {
  readonly seed: number
  readonly episodes: number
  readonly matrixEpisodes: number
  readonly mixed: readonly Summary[]
  readonly matrix: Readonly<Record<string, readonly Summary[]>>
  readonly runs: readonly EpisodeRecord[]
}

/** The schedule of one episode: `mixed`, or one fault kind alone. */
export function scheduleOf(kind: 'mixed' | FaultKind, seed: number, task: Task, episode: number): FaultSchedule | undefined {
  const episodeSeed = hashSeed(seed, kind, task.id, episode)
  return kind === 'mixed' ? mixedSchedule(episodeSeed, task.faultTargets) : singleFaultSchedule(kind, episodeSeed, task.faultTargets)
}

export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const contenders = options.contenders ?? CONTENDERS
  const tasks = options.tasks ?? TASKS
  const kinds: Array<'mixed' | FaultKind> = ['mixed', ...(options.matrixEpisodes > 0 ? (options.faults ?? ALL_FAULTS) : [])]
  const plan: Array<{ kind: 'mixed' | FaultKind; task: Task; episode: number; schedule: FaultSchedule }> = []
  for (const kind of kinds)
    for (const task of tasks)
      for (let episode = 0; episode < (kind === 'mixed' ? options.episodes : options.matrixEpisodes); episode++) {
        const schedule = scheduleOf(kind, options.seed, task, episode)
        if (schedule !== undefined) plan.push({ kind, task, episode, schedule })
      }
  const endpoint = await startEndpoint()
  const runs: EpisodeRecord[] = []
  try {
    const total = plan.length * contenders.length
    for (const contender of contenders)
      for (const { kind, task, episode, schedule } of plan) {
        const { trace: _trace, ...result } = await runEpisode(endpoint, contender, task, schedule)
        runs.push({ ...result, schedule: kind, episode })
        options.onProgress?.(runs.length, total)
      }
  } finally {
    await endpoint.close()
  }
  const fold = (kind: string) =>
    contenders.map((c) =>
      summarize(
        c.id,
        runs.filter((r) => r.contender === c.id && r.schedule === kind),
      ),
    )
  return {
    seed: options.seed,
    episodes: options.episodes,
    matrixEpisodes: options.matrixEpisodes,
    mixed: fold('mixed'),
    matrix: Object.fromEntries(kinds.filter((k) => k !== 'mixed').map((kind) => [kind, fold(kind)])),
    runs,
  }
}
