import type { CheckpointStore, RunSnapshot } from '@shallot/agent'
import { parseOptions, ToolError } from '@shallot/core'
import { z } from 'zod'
import { sqliteClaims } from './sqlite-claims.js'
import { connectionShape, exactlyOnePlace, openConnection, type SqliteDatabase } from './sqlite-connection.js'

/**
 * Options of {@link sqliteCheckpoints}: give `path` or an open `database`, not both.
 *
 * @example
 * sqliteCheckpointsOptionsSchema.parse({ path: 'run.db' })
 */
export const sqliteCheckpointsOptionsSchema = z
  .object({
    /** `path` or `database`, the table of snapshots (default `shallot_checkpoints`), `busyTimeoutMs`: see connectionShape. */
    ...connectionShape('shallot_checkpoints'),
    /**
     * How long a claim on a run lasts without renewal; its holder renews it every third of this while
     * the run is driven. A claim also lapses at once when its process is gone. Default 60000 ms.
     */
    claimLeaseMs: z.number().int().min(100).max(86_400_000).default(60_000),
  })
  .strict()
  .refine(...exactlyOnePlace())

export type SqliteCheckpointsOptions = z.input<typeof sqliteCheckpointsOptionsSchema>

/** Checkpoints in one SQLite file, with the run ids it holds. */
export interface SqliteCheckpoints extends CheckpointStore {
  save(snapshot: RunSnapshot): void
  load(runId: string): RunSnapshot | undefined
  /**
   * Takes `runId` for one run() or resume() across every process on this file, so two processes
   * never drive one run at once (the agent calls it); `undefined` while another holds it.
   */
  claim(runId: string): (() => void) | undefined
  /** Every run id with a checkpoint, most recently saved first. */
  runIds(): string[]
  /** Deletes the checkpoint of `runId`; true when there was one. */
  remove(runId: string): boolean
  readonly database: SqliteDatabase
  /** Closes the connection if this store opened it (from `path`). */
  close(): void
}

const int = z.number().int().min(0)
const message = z.union([
  z.looseObject({ role: z.literal('user'), content: z.string() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.string().optional(),
    toolCalls: z.array(z.looseObject({ id: z.string(), name: z.string() })),
  }),
  z.looseObject({ role: z.literal('tool'), callId: z.string(), name: z.string(), content: z.string(), ok: z.boolean() }),
])
/** What the agent loop reads from a snapshot to continue a run; unknown fields (a newer core's) are kept. */
const snapshotSchema = z.looseObject({
  version: z.literal(1),
  runId: z.string().min(1),
  input: z.string(),
  status: z.enum(['running', 'completed', 'stopped', 'parked']),
  turn: int,
  stepsUsed: int,
  state: z.record(z.string(), z.unknown()),
  transcript: z.array(message).min(1),
  turns: z.array(z.looseObject({ turn: int, calls: z.array(z.looseObject({ id: z.string(), name: z.string() })) })),
  output: z.string().optional(),
})

/** Reads stored text back as a snapshot of `runId`, or says what is wrong with it. */
function readSnapshot(text: unknown, runId: string): RunSnapshot | string {
  if (typeof text !== 'string') return 'the snapshot column is not text'
  let value: unknown
  try {
    value = JSON.parse(text, (key, v) => {
      if (key === '__proto__') throw new SyntaxError('a "__proto__" key')
      return v
    })
  } catch (err) {
    return `not JSON (${err instanceof Error ? err.message : String(err)})`
  }
  const parsed = snapshotSchema.safeParse(value)
  if (!parsed.success) {
    const first = parsed.error.issues[0]
    return `${first?.path.join('.') || 'the snapshot'}: ${first?.message ?? 'invalid'}`
  }
  if (parsed.data.runId !== runId) return `it is the snapshot of run "${parsed.data.runId}"`
  return parsed.data as unknown as RunSnapshot
}

/**
 * `createAgent({ checkpoints })` on SQLite (better-sqlite3, WAL, `synchronous = FULL` on a file it
 * opened): one row per run, replaced after every completed turn, so a process killed mid-run
 * resumes at its last completed turn from another process. A row that is not a snapshot of its run
 * makes `load` throw `outcome_unknown` instead of resuming from a state nobody wrote or starting over.
 *
 * @example
 * const checkpoints = sqliteCheckpoints({ path: 'run.db' })
 * const agent = createAgent({ model, tools, checkpoints })
 * const outcome = await agent.resume('run-42')
 */
export function sqliteCheckpoints(options: SqliteCheckpointsOptions): SqliteCheckpoints {
  const opts = parseOptions('sqliteCheckpoints()', sqliteCheckpointsOptionsSchema, options)
  const table = `"${opts.tableName}"`
  const {
    db,
    owned,
    made: claims,
  } = openConnection(opts, {
    durable: true,
    tables: (db) => {
      db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
        run_id TEXT PRIMARY KEY NOT NULL,
        snapshot TEXT NOT NULL,
        saved_at INTEGER NOT NULL
      ) WITHOUT ROWID`)
      return sqliteClaims(db, `"${opts.tableName}_claims"`, opts.claimLeaseMs)
    },
  })
  const upsert = db.prepare<[string, string, number]>(
    `INSERT INTO ${table} (run_id, snapshot, saved_at) VALUES (?, ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET snapshot = excluded.snapshot, saved_at = excluded.saved_at`,
  )
  const select = db.prepare<[string], { snapshot: unknown }>(`SELECT snapshot FROM ${table} WHERE run_id = ?`)
  const ids = db.prepare<[], { run_id: string }>(`SELECT run_id FROM ${table} ORDER BY saved_at DESC, run_id`)
  const drop = db.prepare<[string]>(`DELETE FROM ${table} WHERE run_id = ?`)
  let seq = 0
  return {
    database: db,
    save(snapshot) {
      // saved_at orders runIds(); a counter under the same millisecond keeps the order of saves.
      seq = Math.max(seq + 1, Date.now())
      upsert.run(snapshot.runId, JSON.stringify(snapshot), seq)
    },
    load(runId) {
      const row = select.get(runId)
      if (row === undefined) return undefined
      const snapshot = readSnapshot(row.snapshot, runId)
      if (typeof snapshot !== 'string') return snapshot
      throw new ToolError(
        'outcome_unknown',
        `The checkpoint of run "${runId}" cannot be read back (${snapshot}); the run is not resumed.`,
        {
          category: 'user',
          retryable: false,
          safeToRepeat: false,
          hint: 'look at what the run already did before starting it again; the row stays until it is deleted',
          details: { runId, problem: snapshot },
        },
      )
    },
    claim: (runId) => claims.claim(runId),
    runIds() {
      return ids.all().map((r) => r.run_id)
    },
    remove(runId) {
      return drop.run(runId).changes === 1
    },
    close() {
      claims.stop()
      if (owned && db.open) db.close()
    },
  }
}
