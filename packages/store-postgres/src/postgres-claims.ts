import type { PostgresStoreContext } from './postgres-store-context.js'
import { statement } from './postgres-store-context.js'
import { NOW } from './tables.js'

/**
 * Claims on runs for `CheckpointStore.claim`: one row per held run with its holder and when the claim
 * lapses, in the server's time. Taking one is a single upsert that only replaces a lapsed row, so two
 * workers can never both hold a run. The holder renews it every third of `leaseMs` while it holds it;
 * a worker that dies (or is frozen past the lease) stops renewing, and the run is free again.
 */
export function postgresClaims(context: PostgresStoreContext, leaseMs: number) {
  const { pool, tables, bounded, log, nowParam } = context
  const t = tables.claims
  const takeSql = `INSERT INTO ${t} AS c (run_id, holder, lease_until) VALUES ($2, $3, ${NOW} + $4)
    ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until
    WHERE c.lease_until <= ${NOW}`
  const renewSql = `UPDATE ${t} SET lease_until = ${NOW} + $4 WHERE run_id = $2 AND holder = $3`
  const giveSql = `DELETE FROM ${t} WHERE run_id = $1 AND holder = $2`
  let holders = 0

  return async function claim(runId: string): Promise<(() => Promise<void>) | undefined> {
    const holder = `${process.pid}:${++holders}:${Math.random().toString(36).slice(2)}`
    const taken = await bounded('checkpoints.claim', () => statement(pool, takeSql, [nowParam(), runId, holder, leaseMs]))
    if (taken.rowCount !== 1) return undefined
    const timer = setInterval(
      () => {
        // A renewal that fails (the server restarting) is tried again at the next tick; the lease covers two misses.
        bounded('checkpoints.claim', () => statement(pool, renewSql, [nowParam(), runId, holder, leaseMs])).then(
          (renewed) => {
            if (renewed.rowCount === 0) clearInterval(timer) // lapsed and taken by another: not ours to renew
          },
          (err: unknown) => log.warn({ err, runId }, 'could not renew the claim on a run; it lapses unless the next renewal succeeds'),
        )
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    )
    timer.unref()
    return async () => {
      clearInterval(timer)
      await bounded('checkpoints.claim', () => statement(pool, giveSql, [runId, holder]))
    }
  }
}
