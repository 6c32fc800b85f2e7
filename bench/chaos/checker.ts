// The history checker: reads what the world recorded (the ledger of writes, the keys the idempotency
// layer issued, every request of every drive), what the operator answered and where each run ended,
// and names each promise the fleet broke by its kind. Pure: no I/O, no clock.
import type { RunPlan } from './schedule.js'
import { canonicalArgs, checkDrivers, checkWrites, type WriteCounts } from './write-checks.js'

export { canonicalArgs }

export interface JobFinal {
  /** BullMQ's state at the end: completed, failed, or anything else (not terminal). Absent: no job. */
  readonly state?: string
  readonly status?: 'completed' | 'stopped'
  readonly kind?: string | null
  readonly failedReason?: string
  readonly enqueuedAt: number
  readonly finishedAt?: number
}

/** A write as the world recorded it: the tool wrote it itself, with the key it was called with. */
export interface LedgerRow {
  readonly run_id: string
  readonly tool: string
  readonly call_id: string
  readonly idem_key: string | null
  readonly args: string
  /** The drive that made it (worker pid and claim number). */
  readonly driver: string
}

/** A key the idempotency layer handed a tool for a call, recorded as the call went through. */
export interface IssuedKey {
  readonly run_id: string
  readonly tool: string
  readonly args: string
  readonly idem_key: string
}

/** A request a run's drive made of the world, in the order the world recorded it. */
export interface Act {
  readonly run_id: string
  readonly driver: string
  readonly what: 'model' | 'quote' | 'write'
  /** When the world recorded it (epoch ms), for a reader of the history; the checker goes by the order alone. */
  readonly at?: number
}

export interface ApprovalRow {
  readonly run_id: string
  readonly call_id: string
  readonly tool: string
  readonly args: string
  readonly answer: string
}

/** A tool result of a run's final transcript. */
export interface ToolOutcome {
  readonly name: string
  readonly ok: boolean
  readonly content: string
}

export interface History {
  readonly plans: readonly RunPlan[]
  /** Each planned run's job (its id is the run id). */
  readonly jobs: ReadonlyMap<string, JobFinal>
  /** Jobs of planned runs enqueued again under job ids of their own (a producer's duplicate), by job id. */
  readonly extraJobs: ReadonlyMap<string, JobFinal & { readonly runId: string }>
  readonly ledger: readonly LedgerRow[]
  readonly issued: readonly IssuedKey[]
  /** In the order the world recorded them. */
  readonly acts: readonly Act[]
  readonly approvals: readonly ApprovalRow[]
  readonly outcomes: ReadonlyMap<string, readonly ToolOutcome[]>
  /**
   * Writes the world made and then forgot: a failover to a replica that had not received them rolled
   * them back with the rest of the database. A run that reported one done is the database's loss of
   * an acknowledged commit, counted apart, not a success the ledger never saw.
   */
  readonly forgotten?: readonly LedgerRow[]
  /** The operator's answers a failover rolled back the same way: the answer was given, the database forgot it. */
  readonly forgottenApprovals?: readonly ApprovalRow[]
  /** A run must reach its terminal state within this many ms of being enqueued. */
  readonly boundMs: number
}

/** Every way the soak can find the fleet breaking a promise, each named so a report says which. */
export const ANOMALY_KINDS = [
  'lost_run',
  'late',
  'failed_job',
  'stopped_without_kind',
  'unkeyed_write',
  'duplicate_by_key',
  'duplicate_write',
  'key_changed',
  'foreign_key',
  'overlapping_drivers',
  'unapproved_refund',
  'phantom_success',
  'stranger_write',
] as const
export type AnomalyKind = (typeof ANOMALY_KINDS)[number]

export interface Anomaly {
  readonly kind: AnomalyKind
  readonly runId: string
  readonly detail: string
}

export interface UnknownOutcome {
  readonly runId: string
  readonly tool: string
  /** What the ledger says: the write took effect (true) or never did (false). */
  readonly landed: boolean
}

export interface Verdict {
  readonly anomalies: readonly Anomaly[]
  readonly byKind: Readonly<Partial<Record<AnomalyKind, number>>>
  readonly duplicates: WriteCounts
  /** Runs whose requests to the world came from two drives at once. */
  readonly overlaps: number
  /** Writes runs reported done that a failover then rolled back ({@link History.forgotten}). */
  readonly forgotten: number
  readonly lost: readonly string[]
  readonly unknowns: readonly UnknownOutcome[]
  readonly terminalMs: readonly number[]
  /** Final states: `completed`, `stopped:<kind>`, `failed`. */
  readonly finals: Readonly<Record<string, number>>
}

function terminalOf(runId: string, job: JobFinal | undefined, boundMs: number, anomalies: Anomaly[]): string | undefined {
  if (job?.state === undefined) return undefined
  if (job.state === 'failed') {
    const detail = `its job failed (${job.failedReason ?? 'no reason'}) instead of completing or stopping with a kind`
    anomalies.push({ kind: 'failed_job', runId, detail })
    return 'failed'
  }
  if (job.state !== 'completed') return undefined
  if (job.status === 'stopped' && (typeof job.kind !== 'string' || job.kind === '')) {
    anomalies.push({ kind: 'stopped_without_kind', runId, detail: 'stopped without a kind' })
  }
  const took = (job.finishedAt ?? Number.POSITIVE_INFINITY) - job.enqueuedAt
  if (!(took <= boundMs))
    anomalies.push({ kind: 'late', runId, detail: `reached its terminal state after ${took} ms, past the bound of ${boundMs} ms` })
  return job.status === 'stopped' ? `stopped:${job.kind ?? 'none'}` : (job.status ?? 'completed')
}

function checkApprovals(history: History, anomalies: Anomaly[]): void {
  const answers = [...history.approvals, ...(history.forgottenApprovals ?? [])]
  for (const row of history.ledger.filter((r) => r.tool === 'refund_payment')) {
    const given = answers.filter(
      (a) => a.run_id === row.run_id && a.tool === row.tool && a.answer === 'approve' && canonicalArgs(a.args) === canonicalArgs(row.args),
    )
    if (given.length === 0) {
      anomalies.push({
        kind: 'unapproved_refund',
        runId: row.run_id,
        detail: `refund_payment ${row.args} ran without an approval of those arguments`,
      })
    }
  }
}

/** Each write the run's final transcript reports as outcome_unknown, with the ledger's answer; and each reported success must be in it. */
function checkOutcomes(history: History, runId: string, anomalies: Anomaly[], unknowns: UnknownOutcome[]): number {
  let forgotten = 0
  for (const outcome of history.outcomes.get(runId) ?? []) {
    if (outcome.name !== 'charge_card' && outcome.name !== 'refund_payment') continue
    const landed = history.ledger.some((r) => r.run_id === runId && r.tool === outcome.name)
    if (!outcome.ok && outcome.content.includes('outcome_unknown')) unknowns.push({ runId, tool: outcome.name, landed })
    if (!outcome.ok || landed) continue
    if ((history.forgotten ?? []).some((r) => r.run_id === runId && r.tool === outcome.name)) forgotten++
    else anomalies.push({ kind: 'phantom_success', runId, detail: `${outcome.name} reported done but the ledger has no such write` })
  }
  return forgotten
}

/** A job beyond a run's own (a duplicate enqueue under its own id) must end too: completed, or stopped with a kind. */
function checkExtraJobs(history: History, anomalies: Anomaly[], lost: string[]): void {
  for (const [jobId, job] of history.extraJobs) {
    if (terminalOf(job.runId, job, history.boundMs, anomalies) !== undefined) continue
    lost.push(jobId)
    anomalies.push({ kind: 'lost_run', runId: job.runId, detail: `its duplicate job ${jobId} was ${job.state ?? 'missing'} at the end` })
  }
}

/**
 * Checks a soak's history. Per run: a terminal state (completed, or stopped with a kind) within the
 * bound, or it is lost; every write at most once by key and by logical write, under the one key the
 * idempotency layer issued for it; one driver at a time; every unknown outcome matched against the
 * ledger; every refund in the ledger approved, with those arguments, by the operator. Each anomaly
 * found is named by its kind.
 *
 * @example
 * const verdict = checkHistory(history)
 * if (verdict.anomalies.length > 0) process.exitCode = 1
 */
export function checkHistory(history: History): Verdict {
  const anomalies: Anomaly[] = []
  const lost: string[] = []
  const unknowns: UnknownOutcome[] = []
  const terminalMs: number[] = []
  const finals: Record<string, number> = {}
  let forgotten = 0
  for (const plan of history.plans) {
    const job = history.jobs.get(plan.runId)
    const final = terminalOf(plan.runId, job, history.boundMs, anomalies)
    if (final === undefined) {
      lost.push(plan.runId)
      anomalies.push({ kind: 'lost_run', runId: plan.runId, detail: `lost (job ${job?.state ?? 'missing'} at the end)` })
      continue
    }
    finals[final] = (finals[final] ?? 0) + 1
    if (job?.finishedAt !== undefined) terminalMs.push(job.finishedAt - job.enqueuedAt)
    forgotten += checkOutcomes(history, plan.runId, anomalies, unknowns)
  }
  checkExtraJobs(history, anomalies, lost)
  const planned = new Set(history.plans.map((p) => p.runId))
  for (const row of history.ledger) {
    if (!planned.has(row.run_id)) anomalies.push({ kind: 'stranger_write', runId: row.run_id, detail: 'a write for a run nobody started' })
  }
  const duplicates = checkWrites(history.ledger, history.issued, anomalies)
  const overlaps = checkDrivers(history.acts, anomalies)
  checkApprovals(history, anomalies)
  const byKind: Partial<Record<AnomalyKind, number>> = {}
  for (const anomaly of anomalies) byKind[anomaly.kind] = (byKind[anomaly.kind] ?? 0) + 1
  return { anomalies, byKind, duplicates, overlaps, forgotten, lost, unknowns, terminalMs: terminalMs.sort((a, b) => a - b), finals }
}

/** The p-th percentile (0–100) of sorted values; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}
