import { type RetryBudgetStore, retryBudgetRefills } from '@shallot/retry'
import { type PostgresStoreContext, type Query, statement, transaction } from './postgres-store-context.js'
import { spentSchema } from './stored-values.js'

/**
 * The retry budget of `postgresStores()`: one token bucket for the fleet.
 *
 * @example
 * const { retryBudget } = postgresStores({ pool })
 * await retryBudget.available() // 500 until someone retries
 */
export interface PostgresRetryBudget extends RetryBudgetStore {
  readonly name: string
  readonly capacity: number
  tryTake(tokens: number): Promise<boolean>
  refill(tokens: number): Promise<void>
  available(): Promise<number>
}

/**
 * One token bucket shared by every worker (`retry({ retryBudget })`): a row of tokens spent (a
 * missing row is a full bucket), taken from under a row lock so concurrent workers never overspend
 * it: a take is always a transaction, and what one worker spends the next take anywhere sees.
 * Refills (one per successful call) are held in this worker and written in one statement, with its
 * next take or on its first refill once the oldest held is `refillFlushMs` old, so a healthy call
 * costs the database nothing; meanwhile the fleet's bucket is short of them (stricter, never looser).
 * A spent count that is not a finite, non-negative number is corrupt, and the bucket fails closed
 * as Redis's does: `available()` reports 0, and the take that finds it rewrites it as empty (all of
 * `capacity` spent, logged) and is refused, so garbage never turns into a fresh bucket of retries;
 * successes refill it as after a storm. A take that answers after its deadline gives
 * its tokens back.
 *
 * @example
 * const { retryBudget } = postgresStores({ pool, retryBudget: { capacity: 200 } })
 * createStack({ tools, middleware: [retry({ retryBudget })] })
 */
export function postgresRetryBudget(
  context: PostgresStoreContext & { readonly name: string; readonly capacity: number; readonly refillFlushMs: number },
): PostgresRetryBudget {
  const { pool, tables, bounded, clock, log, name, capacity } = context
  const refills = retryBudgetRefills(clock, context.refillFlushMs)
  const t = tables.budgets
  const touchSql = `INSERT INTO ${t} (name, spent) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`
  const lockSql = `SELECT spent FROM ${t} WHERE name = $1 FOR UPDATE`
  const writeSql = `UPDATE ${t} SET spent = $2 WHERE name = $1`

  /** Tokens spent, or `undefined` when the row is corrupt (logged). */
  function spentOf(raw: unknown, op: string): number | undefined {
    if (raw === undefined) return 0
    const parsed = spentSchema.safeParse(raw)
    if (parsed.success) return parsed.data
    log.warn(
      { name, op, spent: String(raw) },
      op === 'retryBudget.tryTake'
        ? 'retry budget in PostgreSQL was corrupt; rewritten as empty, so no retry until successes refill it'
        : 'retry budget in PostgreSQL is corrupt; reported as empty (the next take rewrites it so)',
    )
    return undefined
  }

  /** Locks the bucket's row, puts back the `carried` refills, and spends `tokens` if that many are left. */
  function take(tokens: number, carried: number, signal: AbortSignal): Promise<boolean> {
    return transaction(pool, signal, async (query: Query) => {
      await query(touchSql, [name])
      const found = spentOf((await query(lockSql, [name])).rows[0]?.spent, 'retryBudget.tryTake')
      if (found === undefined) {
        await query(writeSql, [name, Math.max(0, capacity - carried)])
        return false
      }
      const spent = Math.max(0, found - carried)
      const taken = spent + tokens <= capacity
      const next = taken ? spent + tokens : spent
      if (next !== found) await query(writeSql, [name, next])
      return taken
    })
  }

  // One statement, and no write at all while the bucket is full: every successful call refills.
  // It moves only a valid positive count (NaN sorts above Infinity in PostgreSQL); tryTake repairs the rest.
  const refillSql = `UPDATE ${t} SET spent = greatest(0, spent - $2) WHERE name = $1 AND spent > 0 AND spent < 'Infinity'`

  // A refill whose write failed is not held again: the bucket stays short of it, stricter rather than looser.
  function write(tokens: number): Promise<void> {
    return bounded('retryBudget.refill', async () => {
      await statement(pool, refillSql, [name, tokens])
    })
  }

  function refill(tokens: number): Promise<void> {
    const due = refills.add(tokens)
    return due === 0 ? Promise.resolve() : write(due)
  }

  return {
    name,
    capacity,
    tryTake(tokens) {
      // The take carries the held refills: this worker's successes count before its retry is priced.
      const carried = refills.takeAll()
      return bounded(
        'retryBudget.tryTake',
        (signal) => take(tokens, carried, signal),
        (taken) => {
          if (taken) refill(tokens).catch((err: unknown) => log.warn({ name, err }, 'could not give back tokens taken after the deadline'))
        },
      )
    },
    refill,
    available() {
      return bounded('retryBudget.available', async () => {
        const { rows } = await statement(pool, `SELECT spent FROM ${t} WHERE name = $1`, [name])
        const spent = spentOf(rows[0]?.spent, 'retryBudget.available')
        // What this worker would see: the bucket, with the refills it holds put back.
        return spent === undefined ? 0 : Math.max(0, capacity - Math.max(0, spent - refills.held))
      })
    },
  }
}
