import type { CheckpointStore, RunSnapshot } from '@shallot/agent'
import { ToolError } from '@shallot/core'
import { runSnapshotSchema } from './checkpoint-schema.js'
import { postgresClaims } from './postgres-claims.js'
import { type PostgresStoreContext, statement } from './postgres-store-context.js'
import { parseStored } from './stored-values.js'
import { NOW } from './tables.js'

/** A store of checkpoints that can also forget one. */
export interface PostgresCheckpoints extends CheckpointStore {
  save(snapshot: RunSnapshot): Promise<void>
  load(runId: string): Promise<RunSnapshot | undefined>
  /** Deletes the checkpoint of `runId`; true when there was one. */
  remove(runId: string): Promise<boolean>
  /**
   * Takes `runId` for one run() or resume() across the fleet (the agent calls it), so two workers
   * never drive one run at once; `undefined` while another worker holds it.
   */
  claim(runId: string): Promise<(() => Promise<void>) | undefined>
}

/**
 * The refusal for a checkpoint that is not a well-formed snapshot of its run: resuming it could
 * repeat completed turns or continue from a state nobody wrote, and starting over would run every
 * side effect again, so neither happens; a person must look.
 *
 * @example
 * throw corruptCheckpoint('run-42', 'turn: must be an integer')
 */
export function corruptCheckpoint(runId: string, problem: string): ToolError {
  return new ToolError('outcome_unknown', `The checkpoint of run "${runId}" is corrupt (${problem}), so the run cannot be resumed.`, {
    category: 'user',
    retryable: false,
    safeToRepeat: false,
    hint: 'inspect the run’s side effects before starting it again; the checkpoint row stays for inspection until it is deleted',
    details: { runId, problem },
  })
}

/**
 * `createAgent({ checkpoints })` in PostgreSQL: one row per run, replaced after every completed
 * turn (an upsert, durable once it answers). `load` validates the row: a snapshot that is not well
 * formed rejects with `outcome_unknown` instead of resuming or starting over.
 *
 * @example
 * const { checkpoints } = postgresStores({ pool })
 * const agent = createAgent({ model, tools, checkpoints })
 * await agent.resume('run-42')
 */
export function postgresCheckpoints(context: PostgresStoreContext, claimLeaseMs = 30_000): PostgresCheckpoints {
  const { pool, tables, bounded, log, nowParam } = context
  const t = tables.checkpoints
  const saveSql = `INSERT INTO ${t} (run_id, snapshot, updated_at) VALUES ($2, $3, ${NOW})
    ON CONFLICT (run_id) DO UPDATE SET snapshot = EXCLUDED.snapshot, updated_at = EXCLUDED.updated_at`

  return {
    claim: postgresClaims(context, claimLeaseMs),
    save(snapshot) {
      return bounded('checkpoints.save', async () => {
        await statement(pool, saveSql, [nowParam(), snapshot.runId, JSON.stringify(snapshot)])
      })
    },
    async load(runId) {
      const { rows } = await bounded('checkpoints.load', () => statement(pool, `SELECT snapshot FROM ${t} WHERE run_id = $1`, [runId]))
      const raw = rows[0]?.snapshot
      if (raw === undefined) return undefined
      const parsed = typeof raw === 'string' ? parseStored(runSnapshotSchema, raw) : { problem: 'not text' }
      const problem = 'problem' in parsed ? parsed.problem : parsed.value.runId !== runId ? 'it belongs to another run' : undefined
      if (problem !== undefined || 'problem' in parsed) {
        log.warn({ runId, problem }, 'checkpoint in PostgreSQL is corrupt; the run is not resumed')
        throw corruptCheckpoint(runId, problem ?? 'unreadable')
      }
      return parsed.value
    },
    remove(runId) {
      return bounded('checkpoints.remove', async () => {
        const { rowCount } = await statement(pool, `DELETE FROM ${t} WHERE run_id = $1`, [runId])
        return rowCount === 1
      })
    },
  }
}
