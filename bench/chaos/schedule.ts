import { seededRandom } from '@shallot/testing'

/** The faults the soak injects; each is one line of the report's "faults by kind". */
export const FAULT_KINDS = ['worker_kill', 'worker_pause', 'redis_kill', 'postgres_stop', 'clock_jump'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export interface Fault {
  /** Ms after the soak started. */
  readonly at: number
  readonly kind: FaultKind
  /** Which worker (index into the fleet) for the worker faults and clock jumps. */
  readonly worker: number
  /** How long the fault lasts: a pause, a server's time down, a clock's jump. */
  readonly ms: number
}

/** What each run does, drawn from the seed: which steps its scripted model takes. */
export interface RunPlan {
  readonly runId: string
  /** Its first fx quote answers 429 with a Retry-After past the park threshold: the run parks. */
  readonly parks: boolean
  /** It asks for a refund, which needs an approval; the operator approves it or not. */
  readonly refund: boolean
  readonly approve: boolean
  /** Its model's first answer is a 429 with a Retry-After past the park threshold. */
  readonly model429: boolean
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
}

/**
 * The whole soak from its seed: every run's plan and every fault, in time order. The same seed
 * gives the same schedule, so a failure is replayed with `--seed`.
 *
 * @example
 * const { runs, faults } = soakSchedule({ seed: 7, runs: 60, workers: 3, spanMs: 30_000, faults: 6, lockMs: 2000 })
 */
export function soakSchedule(shape: SoakShape): { runs: RunPlan[]; faults: Fault[] } {
  const random = seededRandom(shape.seed)
  const pick = (n: number) => Math.floor(random() * n)
  const runs = Array.from({ length: shape.runs }, (_, i): RunPlan => {
    const refund = random() < 0.3
    return {
      runId: `s${shape.seed}-run-${i}`,
      parks: random() < 0.3,
      refund,
      approve: refund && random() < 0.7,
      model429: random() < 0.15,
      enqueueAt: Math.floor((i / shape.runs) * shape.spanMs),
    }
  })
  // Every kind at least once (the first five faults cycle through them), the rest drawn.
  const faults = Array.from({ length: shape.faults }, (_, i): Fault => {
    const kind = i < FAULT_KINDS.length ? (FAULT_KINDS[i] as FaultKind) : (FAULT_KINDS[pick(FAULT_KINDS.length)] as FaultKind)
    const at = Math.floor(shape.spanMs * (0.05 + 0.9 * random()))
    const ms = faultLength(kind, shape.lockMs, random)
    return { at, kind, worker: pick(shape.workers), ms }
  })
  faults.sort((a, b) => a.at - b.at)
  return { runs, faults }
}

function faultLength(kind: FaultKind, lockMs: number, random: () => number): number {
  switch (kind) {
    case 'worker_pause':
      // Longer than the lease, so another worker's stalled check takes the paused worker's jobs.
      return Math.floor(lockMs * (1.5 + random()))
    case 'redis_kill':
    case 'postgres_stop':
      return Math.floor(500 + 1500 * random())
    case 'clock_jump':
      return Math.floor(2_000 + 8_000 * random())
    default:
      return 0
  }
}
