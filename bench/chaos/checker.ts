// The history checker: reads what the tools wrote (the ledger), what the operator answered, and
// where each run ended, and says per run whether the fleet kept its promises. Pure: no I/O, no clock.
import type { RunPlan } from './schedule.js'

export interface JobFinal {
  /** BullMQ's state at the end: completed, failed, or anything else (not terminal). Absent: no job. */
  readonly state?: string
  readonly status?: 'completed' | 'stopped'
  readonly kind?: string | null
  readonly failedReason?: string
  readonly enqueuedAt: number
  readonly finishedAt?: number
}

export interface LedgerRow {
  readonly run_id: string
  readonly tool: string
  readonly call_id: string
  readonly idem_key: string | null
  readonly args: string
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
  readonly jobs: ReadonlyMap<string, JobFinal>
  readonly ledger: readonly LedgerRow[]
  readonly approvals: readonly ApprovalRow[]
  readonly outcomes: ReadonlyMap<string, readonly ToolOutcome[]>
  /** A run must reach its terminal state within this many ms of being enqueued. */
  readonly boundMs: number
}

export interface UnknownOutcome {
  readonly runId: string
  readonly tool: string
  /** What the ledger says: the write took effect (true) or never did (false). */
  readonly landed: boolean
}

export interface Verdict {
  readonly violations: readonly string[]
  readonly duplicates: number
  readonly lost: readonly string[]
  readonly unknowns: readonly UnknownOutcome[]
  readonly terminalMs: readonly number[]
  /** Final states: `completed`, `stopped:<kind>`, `failed`. */
  readonly finals: Readonly<Record<string, number>>
}

/** The same JSON whatever the key order: an approval's arguments and the ledger's compare by value. */
export function canonicalArgs(text: string): string {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return text
    return JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))))
  } catch {
    return text
  }
}

function terminalOf(runId: string, job: JobFinal | undefined, boundMs: number, violations: string[]): string | undefined {
  if (job?.state === undefined) return undefined
  if (job.state === 'failed') {
    violations.push(`${runId}: its job failed (${job.failedReason ?? 'no reason'}) instead of completing or stopping with a kind`)
    return 'failed'
  }
  if (job.state !== 'completed') return undefined
  if (job.status === 'stopped' && (typeof job.kind !== 'string' || job.kind === '')) {
    violations.push(`${runId}: stopped without a kind`)
  }
  const took = (job.finishedAt ?? Number.POSITIVE_INFINITY) - job.enqueuedAt
  if (!(took <= boundMs)) violations.push(`${runId}: reached its terminal state after ${took} ms, past the bound of ${boundMs} ms`)
  return job.status === 'stopped' ? `stopped:${job.kind ?? 'none'}` : (job.status ?? 'completed')
}

function checkWrites(history: History, violations: string[]): number {
  const byKey = new Map<string, LedgerRow[]>()
  for (const row of history.ledger) {
    if (row.idem_key === null) {
      violations.push(`${row.run_id}: ${row.tool} ran without an idempotency key`)
      continue
    }
    byKey.set(row.idem_key, [...(byKey.get(row.idem_key) ?? []), row])
  }
  let duplicates = 0
  for (const [key, rows] of byKey) {
    if (rows.length < 2) continue
    duplicates += rows.length - 1
    violations.push(`${rows[0]?.run_id}: ${rows[0]?.tool} with key ${key} executed ${rows.length} times`)
  }
  return duplicates
}

function checkApprovals(history: History, violations: string[]): void {
  for (const row of history.ledger.filter((r) => r.tool === 'refund_payment')) {
    const given = history.approvals.filter(
      (a) => a.run_id === row.run_id && a.tool === row.tool && a.answer === 'approve' && canonicalArgs(a.args) === canonicalArgs(row.args),
    )
    if (given.length === 0) violations.push(`${row.run_id}: refund_payment ${row.args} ran without an approval of those arguments`)
  }
}

/** Each write the run's final transcript reports as outcome_unknown, with the ledger's answer; and each reported success must be in it. */
function checkOutcomes(history: History, runId: string, violations: string[], unknowns: UnknownOutcome[]): void {
  for (const outcome of history.outcomes.get(runId) ?? []) {
    if (outcome.name !== 'charge_card' && outcome.name !== 'refund_payment') continue
    const landed = history.ledger.some((r) => r.run_id === runId && r.tool === outcome.name)
    if (!outcome.ok && outcome.content.includes('outcome_unknown')) unknowns.push({ runId, tool: outcome.name, landed })
    if (outcome.ok && !landed) violations.push(`${runId}: ${outcome.name} reported done but the ledger has no such write`)
  }
}

/**
 * Checks a soak's history. Per run: a terminal state (completed, or stopped with a kind) within
 * the bound, or it is lost; every keyed write at most once; every unknown outcome matched against
 * the ledger; every refund in the ledger approved, with those arguments, by the operator.
 *
 * @example
 * const verdict = checkHistory({ plans, jobs, ledger, approvals, outcomes, boundMs: 60_000 })
 * if (verdict.violations.length > 0) process.exitCode = 1
 */
export function checkHistory(history: History): Verdict {
  const violations: string[] = []
  const lost: string[] = []
  const unknowns: UnknownOutcome[] = []
  const terminalMs: number[] = []
  const finals: Record<string, number> = {}
  for (const plan of history.plans) {
    const job = history.jobs.get(plan.runId)
    const final = terminalOf(plan.runId, job, history.boundMs, violations)
    if (final === undefined) {
      lost.push(plan.runId)
      violations.push(`${plan.runId}: lost (job ${job?.state ?? 'missing'} at the end)`)
      continue
    }
    finals[final] = (finals[final] ?? 0) + 1
    if (job?.finishedAt !== undefined) terminalMs.push(job.finishedAt - job.enqueuedAt)
    checkOutcomes(history, plan.runId, violations, unknowns)
  }
  const planned = new Set(history.plans.map((p) => p.runId))
  for (const row of history.ledger) if (!planned.has(row.run_id)) violations.push(`${row.run_id}: a write for a run nobody started`)
  const duplicates = checkWrites(history, violations)
  checkApprovals(history, violations)
  return { violations, duplicates, lost, unknowns, terminalMs: terminalMs.sort((a, b) => a - b), finals }
}

/** The p-th percentile (0–100) of sorted values; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}
