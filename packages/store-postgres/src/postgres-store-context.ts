import type { Clock, Logger } from '@shallot/core'
import type { BoundedCall } from '@shallot/core/kit'
import type { Pool, QueryResultRow } from 'pg'
import type { Tables } from './tables.js'

/** Runs one statement and answers its rows (untrusted: every caller validates them). */
export type Query = (text: string, values: readonly unknown[]) => Promise<{ rows: QueryResultRow[]; rowCount: number | null }>

/** What the stores of one `postgresStores()` call share. */
export interface PostgresStoreContext {
  readonly pool: Pool
  readonly tables: Tables
  readonly bounded: BoundedCall
  /** The stacks' clock. */
  readonly clock: Clock
  readonly log: Logger
  /** `$1` of every statement: a test clock's time, or null for the server's clock. */
  nowParam(): string | null
}

const aborted = () => Object.assign(new Error('the store operation was abandoned at its deadline'), { name: 'AbortError' })

/**
 * Runs `work` in one transaction on a connection of its own (READ COMMITTED; callers lock the rows
 * they decide on with `FOR UPDATE`). A connection that saw any error is destroyed, not returned to
 * the pool: the server rolls its transaction back, and a connection broken by a restart is never
 * handed out again. Nothing starts once `signal` has aborted.
 *
 * @example
 * const token = await transaction(pool, signal, async (query) => (await query(sql, [now, key])).rows[0])
 */
export async function transaction<T>(pool: Pool, signal: AbortSignal, work: (query: Query) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  // A checked-out connection that fails between two queries (the server shutting down) emits
  // `error` on the client, and nobody else listens while it is ours: unheard, that ends the process.
  // The next query then rejects, which is where the failure is handled.
  const ignore = () => {}
  client.on('error', ignore)
  const release = (err?: Error | boolean) => {
    client.off('error', ignore)
    client.release(err)
  }
  if (signal.aborted) {
    release()
    throw aborted()
  }
  const query: Query = (text, values) => client.query({ text, values: [...values] })
  try {
    await query('BEGIN', [])
    const answer = await work(query)
    await query('COMMIT', [])
    release()
    return answer
  } catch (err) {
    release(err instanceof Error ? err : true)
    throw err
  }
}

/**
 * Runs one statement (atomic by itself) on any pooled connection.
 *
 * @example
 * const { rowCount } = await statement(pool, 'DELETE FROM "shallot_idempotency" WHERE key = $2', [null, key])
 */
export async function statement(pool: Pool, text: string, values: readonly unknown[]): ReturnType<Query> {
  return pool.query({ text, values: [...values] })
}
