// The soak's history, read after the last run from the servers directly: every job's final state
// from Redis; the ledger, the issued keys, the world's requests, the operator's answers and each
// run's last checkpoint from the PostgreSQL primary.
import type { RunJobResult } from '@shallot/bullmq'
import type { Job, Queue } from 'bullmq'
import pg from 'pg'
import type { Act, ApprovalRow, History, IssuedKey, JobFinal, LedgerRow, ToolOutcome } from './checker.js'
import { PREFIX } from './rig.js'
import type { RunPlan } from './schedule.js'

async function finalOf(queue: Queue, jobId: string): Promise<JobFinal | undefined> {
  const job = (await queue.getJob(jobId)) as Job<unknown, RunJobResult | null> | undefined
  if (job === undefined) return undefined
  const state = await job.getState()
  const result = job.returnvalue
  return {
    state,
    ...(result === null || result === undefined ? {} : { status: result.status, kind: result.status === 'stopped' ? result.kind : null }),
    ...(job.failedReason ? { failedReason: job.failedReason } : {}),
    enqueuedAt: job.timestamp,
    ...(job.finishedOn === undefined ? {} : { finishedAt: job.finishedOn }),
  }
}

/** The tool results of a checkpoint's transcript; none when it is missing or unreadable. */
function toolsOf(snapshot: string): ToolOutcome[] {
  try {
    const { transcript } = JSON.parse(snapshot) as { transcript?: { role: string; name?: string; ok?: boolean; content?: string }[] }
    return (transcript ?? []).flatMap((m) =>
      m.role === 'tool' ? [{ name: m.name ?? '', ok: m.ok === true, content: m.content ?? '' }] : [],
    )
  } catch {
    return []
  }
}

export interface Gathered extends Omit<History, 'boundMs'> {
  /** Model turns asked more than once (a redone turn, or two drives of one run). */
  readonly repeatedModelTurns: number
}

/**
 * Reads the whole history of a soak once every run is over.
 *
 * @example
 * const history = await gather({ queueOf: () => runs.queue, pgUrl, plans })
 */
export async function gather(options: { queueOf: (plan: RunPlan) => Queue; pgUrl: string; plans: readonly RunPlan[] }): Promise<Gathered> {
  const { plans, queueOf } = options
  const pool = new pg.Pool({ connectionString: options.pgUrl, max: 2 })
  pool.on('error', () => {})
  try {
    const jobs = new Map<string, JobFinal>()
    const extraJobs = new Map<string, JobFinal & { runId: string }>()
    for (let from = 0; from < plans.length; from += 50) {
      await Promise.all(
        plans.slice(from, from + 50).map(async (plan) => {
          const queue = queueOf(plan)
          const final = await finalOf(queue, plan.runId)
          if (final !== undefined) jobs.set(plan.runId, final)
          if (plan.duplicate !== 'own_id') return
          const again = await finalOf(queue, `${plan.runId}.again`)
          extraJobs.set(`${plan.runId}.again`, { runId: plan.runId, enqueuedAt: 0, ...again })
        }),
      )
    }
    const rows = async <T extends pg.QueryResultRow>(sql: string) => (await pool.query<T>(sql)).rows
    const outcomes = new Map<string, ToolOutcome[]>()
    for (const row of await rows<{ run_id: string; snapshot: string }>(`SELECT run_id, snapshot FROM ${PREFIX}checkpoints`)) {
      outcomes.set(row.run_id, toolsOf(row.snapshot))
    }
    const repeated = await rows<{ n: string }>(
      `SELECT count(*)::text AS n FROM (SELECT 1 FROM ${PREFIX}acts WHERE what = 'model' GROUP BY run_id, turn HAVING count(*) > 1) t`,
    )
    return {
      plans,
      jobs,
      extraJobs,
      ledger: await rows<LedgerRow>(`SELECT run_id, tool, call_id, idem_key, args, driver FROM ${PREFIX}ledger ORDER BY id`),
      issued: await rows<IssuedKey>(`SELECT run_id, tool, args, idem_key FROM ${PREFIX}issued ORDER BY id`),
      acts: await rows<Act>(`SELECT run_id, driver, what, (extract(epoch FROM at) * 1000)::float8 AS at FROM ${PREFIX}acts ORDER BY id`),
      approvals: await rows<ApprovalRow>(`SELECT run_id, call_id, tool, args, answer FROM ${PREFIX}approvals ORDER BY id`),
      outcomes,
      repeatedModelTurns: Number(repeated[0]?.n ?? 0),
    }
  } finally {
    await pool.end()
  }
}
