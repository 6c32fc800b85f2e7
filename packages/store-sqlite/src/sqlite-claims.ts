import type { SqliteDatabase } from './sqlite-connection.js'

/** Whether process `pid` on this machine is still running (EPERM: it runs, as another user). */
function alive(pid: unknown): boolean {
  // A bigint from a connection with safe integers on is a pid too; 0 and negatives would signal a group, not a process.
  const n = Number(pid)
  if (!Number.isSafeInteger(n) || n <= 0) return false
  try {
    process.kill(n, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Lapsed claims deleted whenever a claim is taken (so rows of holders that died and runs nobody resumed do not pile up). */
const SWEEP_BATCH = 16

/**
 * Whether a claim row still holds its run: its lease has not run out and its process runs. A row
 * this store did not write (an expiry that is not a number, a pid that is not one) holds nothing.
 */
function holds(row: { pid: unknown; expires_at: unknown }, now: number): boolean {
  const until = row.expires_at
  return (typeof until === 'number' || typeof until === 'bigint') && until > now && alive(row.pid)
}

export interface SqliteClaims {
  claim(runId: string): (() => void) | undefined
  /** Stops renewing every claim this store holds (they lapse with their lease); used by `close()`. */
  stop(): void
}

/**
 * Claims on runs in one SQLite file, for {@link CheckpointStore.claim}: one row per held run with its
 * holder, the holder's pid and when the claim lapses. A holder renews its claim every third of
 * `leaseMs` while it holds it; a claim lapses when that stops (the lease ran out) or at once when its
 * process is gone, so a crashed process's run can be resumed without waiting.
 */
export function sqliteClaims(db: SqliteDatabase, table: string, leaseMs: number): SqliteClaims {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    run_id TEXT PRIMARY KEY NOT NULL,
    holder TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID`)
  const held = db.prepare<[string], { pid: unknown; expires_at: unknown }>(`SELECT pid, expires_at FROM ${table} WHERE run_id = ?`)
  // What holds() says is lapsed by its expiry alone, in SQL; a live claim's row never matches. A lapsed claim of a
  // process still alive (stopped past its lease) goes too: its renewal then finds no row and stops.
  const sweep = db.prepare<[number]>(
    `DELETE FROM ${table} WHERE run_id IN (SELECT run_id FROM ${table}
     WHERE typeof(expires_at) NOT IN ('integer', 'real') OR expires_at <= ? LIMIT ${SWEEP_BATCH})`,
  )
  const take = db.prepare<[string, string, number, number]>(
    `INSERT INTO ${table} (run_id, holder, pid, expires_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, expires_at = excluded.expires_at`,
  )
  const renew = db.prepare<[number, string, string]>(`UPDATE ${table} SET expires_at = ? WHERE run_id = ? AND holder = ?`)
  const give = db.prepare<[string, string]>(`DELETE FROM ${table} WHERE run_id = ? AND holder = ?`)
  const timers = new Set<NodeJS.Timeout>()
  let holders = 0
  // IMMEDIATE: the write lock is taken before the read, so two processes cannot both see the run free.
  const tryTake = db.transaction((runId: string, holder: string): boolean => {
    const now = Date.now()
    sweep.run(now)
    const row = held.get(runId)
    if (row !== undefined && holds(row, now)) return false
    take.run(runId, holder, process.pid, now + leaseMs)
    return true
  })

  return {
    claim(runId) {
      const holder = `${process.pid}:${++holders}:${Math.random().toString(36).slice(2)}`
      if (!tryTake.immediate(runId, holder)) return undefined
      const timer = setInterval(
        () => {
          // A claim taken over after it lapsed (this process was stopped past the lease) is not renewed.
          if (!db.open || renew.run(Date.now() + leaseMs, runId, holder).changes === 0) release()
        },
        Math.max(1, Math.floor(leaseMs / 3)),
      )
      timer.unref()
      timers.add(timer)
      function release(): void {
        clearInterval(timer)
        timers.delete(timer)
        if (db.open) give.run(runId, holder)
      }
      return release
    },
    stop() {
      for (const timer of timers) clearInterval(timer)
      timers.clear()
    },
  }
}
