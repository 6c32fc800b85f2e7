import { type BreakerState, type BreakerStore, mapTimes, READ_MARGIN_MS, timeMap, updateRounds } from '@shallot/circuit-breaker'
import { type PostgresStoreContext, type Query, statement, transaction } from './postgres-store-context.js'
import { breakerStateSchema, checked, nowSchema, parseStored } from './stored-values.js'
import { NOW } from './tables.js'

const NEVER = new AbortController().signal

/**
 * The breaker store of `postgresStores()`: one state per breaker key for the whole fleet. An update
 * locks the key's row (`FOR UPDATE`), so the fleet's updates of one breaker run one after another;
 * concurrent updates of one key in this process go in one round (their changes apply in call order
 * to one read, written once), so contention grows with workers, not calls. Times are kept in the
 * server's clock and handed to the breaker in the stack's clock. A corrupt state reads as none
 * (logged) and the next write replaces it; when the server is slow or down, `update` rejects within
 * the timeout and the breaker decides on its local state.
 *
 * @example
 * const { breaker: store } = postgresStores({ pool })
 * createStack({ tools, middleware: [circuitBreaker({ store, cooldownMs: 30_000 })] })
 */
export function postgresBreakerStore(context: PostgresStoreContext & { readonly ttlMs: number }): BreakerStore {
  const { pool, tables, bounded, clock, log, nowParam, ttlMs } = context
  const t = tables.breakers
  const lockSql = `SELECT state, expires_at > ${NOW} AS live, (${NOW})::text AS now FROM ${t} WHERE key = $2 FOR UPDATE`
  const getSql = `SELECT b.state, b.expires_at > n.t AS live, n.t::text AS now FROM (SELECT ${NOW} AS t) n LEFT JOIN ${t} b ON b.key = $2`
  const touchSql = `INSERT INTO ${t} (key, state, expires_at) VALUES ($2, NULL, ${NOW} + $3) ON CONFLICT (key) DO NOTHING`
  const writeSql = `UPDATE ${t} SET state = $3, expires_at = ${NOW} + $4 WHERE key = $2`

  async function read(query: Query, sql: string, key: string): Promise<{ state: BreakerState | undefined; serverNow: number }> {
    const raw = (await query(sql, [nowParam(), key])).rows[0]
    const now = checked(nowSchema, raw?.now)
    if (raw === undefined || 'problem' in now) throw new TypeError('the server answered no row and no time')
    if (raw.state === null || raw.live !== true) return { state: undefined, serverNow: now.value }
    const stored = typeof raw.state === 'string' ? parseStored(breakerStateSchema, raw.state) : { problem: 'not text' }
    if ('value' in stored) return { state: stored.value as BreakerState, serverNow: now.value }
    log.warn({ key, problem: stored.problem }, 'breaker state in PostgreSQL is corrupt; treated as none and replaced on the next write')
    return { state: undefined, serverNow: now.value }
  }

  // The round runs in one transaction and its callers are answered once it committed.
  const enqueue = updateRounds(clock, (key, round) =>
    transaction(pool, NEVER, async (query) => {
      await query(touchSql, [nowParam(), key, ttlMs])
      const { state, serverNow } = await read(query, lockSql, key)
      const next = round.apply(state, serverNow)
      if (next !== state) await query(writeSql, [nowParam(), key, JSON.stringify(next), ttlMs])
    }),
  )

  return {
    get(key) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded('circuit-breaker.get', async () => {
        const { state, serverNow } = await read((text, values) => statement(pool, text, values), getSql, key)
        return state === undefined ? undefined : mapTimes(state, timeMap(anchor, serverNow).toLocal)
      })
    },

    update(key, change) {
      return bounded('circuit-breaker.update', (deadline) => enqueue(key, change, deadline))
    },
  }
}
