import { seededRandom } from '@shallot/testing'

/** The faults the soak injects on its schedule; each is one line of the report's "faults by kind". */
export const FAULT_KINDS = [
  'worker_kill',
  'worker_pause',
  'worker_term',
  'rolling_restart',
  'redis_kill',
  'redis_pause',
  'redis_partition',
  'redis_delay',
  'redis_cut',
  'postgres_crash',
  'postgres_failover',
  'postgres_partition',
  'postgres_delay',
  'postgres_cut',
  'clock_jump',
  'clock_step_back',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export interface Fault {
  /** Ms after the soak started. */
  readonly at: number
  readonly kind: FaultKind
  /** Which worker (index into the fleet) for the worker and clock faults. */
  readonly worker: number
  /** How long it lasts: a pause, a server's time down, a partition, a delay's span, a failover's replication lag, a clock's step. */
  readonly ms: number
  /** A delay's added latency per chunk. */
  readonly latencyMs: number
}

/** Misbehaviour planted in one run, which the checker must catch (`--plant`). */
export const PLANTS = ['own_key', 'ignore_claim', 'key_on_resume', 'forgetful_store'] as const
export type Plant = (typeof PLANTS)[number]

/** What each run does, drawn from the seed: which steps its scripted model takes and what goes wrong. */
export interface RunPlan {
  readonly runId: string
  /** Its first fx quote answers 429 with a Retry-After past the park threshold: the run parks. */
  readonly parks: boolean
  /** It asks for a refund, which needs an approval; the operator approves it or not. */
  readonly refund: boolean
  readonly approve: boolean
  /** Its model's first answer is a 429 with a Retry-After past the park threshold. */
  readonly model429: boolean
  /** Its first order lookup never answers (the tool timeout must end it). */
  readonly hangTool?: boolean
  /** Its first model request never answers (the model timeout must end it). */
  readonly hangModel?: boolean
  /** It is enqueued again: under its own id (BullMQ keeps one job), or under another job id (two jobs of one run). */
  readonly duplicate?: 'same_id' | 'own_id'
  readonly plant?: Plant
  /** Ms after the soak started that it is enqueued. */
  readonly enqueueAt: number
}

export interface SoakShape {
  readonly seed: number
  readonly runs: number
  readonly workers: number
  /** The window over which runs are enqueued and faults land, ms. */
  readonly spanMs: number
  /** Faults in the window. */
  readonly faults: number
  /** The job lease (BullMQ's lockDuration); a pause lasts longer than it. */
  readonly lockMs: number
  /** Plant each misbehaviour in one run. */
  readonly plant?: boolean
}

export interface Schedule {
  readonly runs: RunPlan[]
  readonly faults: Fault[]
  /** Each worker slot's wall clock, ms ahead (or behind, negative) of the others'. */
  readonly skews: number[]
}

/**
 * The whole soak from its seed: every run's plan, every fault in time order, every worker's clock
 * skew. The same seed and shape give the same schedule, so a failure is replayed with `--seed`
 * (or `--replay=<history file>`).
 *
 * @example
 * const { runs, faults, skews } = soakSchedule({ seed: 7, runs: 60, workers: 3, spanMs: 30_000, faults: 16, lockMs: 2000 })
 */
export function soakSchedule(shape: SoakShape): Schedule {
  const random = seededRandom(shape.seed)
  const pick = (n: number) => Math.floor(random() * n)
  const chance = (p: number) => random() < p
  const runs = Array.from({ length: shape.runs }, (_, i): RunPlan => {
    const refund = chance(0.3)
    const plan: RunPlan = {
      runId: `s${shape.seed}-run-${i}`,
      parks: chance(0.3),
      refund,
      approve: refund && chance(0.7),
      model429: chance(0.15),
      enqueueAt: Math.floor((i / shape.runs) * shape.spanMs),
    }
    const hangTool = chance(0.03)
    const hangModel = chance(0.03)
    const duplicate = chance(0.05) ? (chance(0.5) ? 'same_id' : 'own_id') : undefined
    return { ...plan, ...(hangTool ? { hangTool } : {}), ...(hangModel ? { hangModel } : {}), ...(duplicate ? { duplicate } : {}) }
  })
  if (shape.plant === true) plantRuns(runs, shape)
  // Every kind at least once (the first faults cycle through them), the rest drawn from all but the
  // rolling restart, which a fleet meets once a deploy and which restarts every worker.
  const drawn = FAULT_KINDS.filter((kind) => kind !== 'rolling_restart')
  const faults = Array.from({ length: shape.faults }, (_, i): Fault => {
    const kind = i < FAULT_KINDS.length ? (FAULT_KINDS[i] as FaultKind) : (drawn[pick(drawn.length)] as FaultKind)
    const at = Math.floor(shape.spanMs * (0.05 + 0.85 * random()))
    return { at, kind, worker: pick(shape.workers), ms: faultLength(kind, shape.lockMs, random), latencyMs: 20 + pick(180) }
  })
  burstDeaths(faults, shape)
  faults.sort((a, b) => a.at - b.at)
  const skews = Array.from({ length: shape.workers }, () => Math.round((random() - 0.5) * 4000))
  return { runs, faults, skews }
}

/** Faults that take a worker's jobs from it: each stalls every job the worker runs. */
const DEATHS: ReadonlySet<FaultKind> = new Set(['worker_kill', 'worker_pause'])

/**
 * BullMQ counts a job's stalls over its whole life and, by default, fails it at the second. A fleet
 * loses workers far less often than a run takes to recover from a loss, so the soak's worker deaths
 * come in bursts (several hosts at once, as a zone outage takes them, one left standing), each worker
 * at most once a burst, the bursts fifteen job locks apart: a run that fails then has met something other than two
 * deaths drawn into its few seconds. Deaths that do not fit become graceful stops (SIGTERM), which
 * stall nothing.
 */
function burstDeaths(faults: Fault[], shape: SoakShape): void {
  const gapMs = 15 * shape.lockMs
  const bursts = Math.floor((0.9 * shape.spanMs) / gapMs) + 1
  let placed = 0
  faults.forEach((fault, index) => {
    if (!DEATHS.has(fault.kind)) return
    // One worker of the fleet outlives each burst.
    const perBurst = Math.max(1, shape.workers - 1)
    const burst = Math.floor(placed / perBurst)
    if (burst >= bursts) {
      faults[index] = { ...fault, kind: 'worker_term', ms: 0 }
      return
    }
    faults[index] = { ...fault, at: Math.floor(0.05 * shape.spanMs + burst * gapMs), worker: placed % perBurst }
    placed++
  })
}

/** Where in the window each plant's run is enqueued at the earliest (the soak runs them one after another). */
const PLANTED_AT: Readonly<Record<Plant, number>> = { own_key: 0.05, ignore_claim: 0.15, key_on_resume: 0.25, forgetful_store: 0.35 }

/**
 * One run per misbehaviour, early in the window in the order of {@link PLANTS} (the two that kill
 * their worker last, so neither kills another plant's drive), plain otherwise, its id naming the plant.
 */
function plantRuns(runs: RunPlan[], shape: SoakShape): void {
  PLANTS.forEach((plant) => {
    const index = Math.floor(PLANTED_AT[plant] * runs.length)
    const plain = runs[index] as RunPlan
    const base = {
      runId: `s${shape.seed}-plant-${plant}-${index}`,
      parks: false,
      refund: false,
      approve: false,
      model429: false,
      enqueueAt: plain.enqueueAt,
      plant,
    }
    // Two jobs of one run at once: a worker that ignores the claim drives it twice.
    runs[index] = plant === 'ignore_claim' ? { ...base, duplicate: 'own_id' } : base
  })
}

function faultLength(kind: FaultKind, lockMs: number, random: () => number): number {
  const between = (low: number, high: number) => Math.floor(low + (high - low) * random())
  switch (kind) {
    case 'worker_pause':
      // Longer than the job's lock, so another worker's stalled check takes the paused worker's jobs;
      // shorter than the run claim's lease (3 locks, renewed every lock), so no one drives a run beside it.
      return between(1.25 * lockMs, 1.75 * lockMs)
    case 'redis_kill':
    case 'redis_pause':
    case 'redis_partition':
      // With BullMQ's reconnect (1 s at least) well inside half the job lock, which a fleet sizes to outlast its Redis's outages.
      return between(0.05 * lockMs, 0.15 * lockMs)
    case 'postgres_crash':
      return between(300, 1500)
    case 'postgres_partition':
      // Within a job lock: the claims held across it are renewed on healing, before their lease lapses.
      return between(300, lockMs)
    case 'redis_delay':
    case 'postgres_delay':
      return between(1000, 4000)
    case 'postgres_failover':
      // The replica's lag: the commits of this window are lost.
      return between(200, 1500)
    case 'clock_jump':
      return between(2000, 10_000)
    case 'clock_step_back':
      return between(1000, 5000)
    default:
      return 0
  }
}
