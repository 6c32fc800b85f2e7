import type { BreakerState, BreakerStore } from '@shallot/circuit-breaker'
import { mapTimes, READ_MARGIN_MS, timeMap } from './breaker-times.js'
import { type PostgresStoreContext, type Query, statement, transaction } from './postgres-store-context.js'
import { breakerStateSchema, checked, nowSchema, parseStored } from './stored-values.js'
import { NOW } from './tables.js'

type Change = (current: BreakerState | undefined) => BreakerState

const NEVER = new AbortController().signal

/** One `update` call waiting for its key's next round. */
interface Waiting {
  readonly change: Change
  /** The worker's clock just before the call, less the read margin: the breaker's `now` is never earlier. */
  readonly anchor: number
  readonly deadline: AbortSignal
  resolve(state: BreakerState): void
  reject(error: unknown): void
}

/** The updates of one key waiting in this process, and whether a round for that key is running. */
type Queue = Waiting[] & { running: boolean }

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
  const queues = new Map<string, Queue>()

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

  async function round(key: string, batch: Waiting[]): Promise<void> {
    // Callers past their deadline have decided on local state already; their changes must not reach the table.
    if (batch.every((w) => w.deadline.aborted)) return
    const answerAll = await transaction(pool, NEVER, async (query) => {
      await query(touchSql, [nowParam(), key, ttlMs])
      const { state, serverNow } = await read(query, lockSql, key)
      const live = batch.filter((w) => !w.deadline.aborted)
      let serverState = state
      const answers = live.map((waiting) => {
        const map = timeMap(waiting.anchor, serverNow)
        const current = serverState === undefined ? undefined : mapTimes(serverState, map.toLocal)
        try {
          const next = waiting.change(current)
          if (next !== current) serverState = mapTimes(next, map.toServer)
          return { state: next }
        } catch (error) {
          return { error }
        }
      })
      if (serverState !== state) await query(writeSql, [nowParam(), key, JSON.stringify(serverState), ttlMs])
      return () =>
        live.forEach((w, i) => {
          const answer = answers[i]
          if (answer !== undefined && 'state' in answer) w.resolve(answer.state)
          else w.reject(answer?.error)
        })
    })
    // Answered only once the transaction committed: nobody acts on a state that was not written.
    answerAll()
  }

  function pump(key: string): void {
    const queue = queues.get(key)
    if (queue === undefined || queue.length === 0 || queue.running) return
    const batch = queue.splice(0)
    queue.running = true
    round(key, batch)
      .catch((err: unknown) => {
        for (const w of batch) w.reject(err)
      })
      .finally(() => {
        queue.running = false
        if (queue.length === 0) queues.delete(key)
        else pump(key)
      })
  }

  return {
    get(key) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded('circuit-breaker.get', async () => {
        const { state, serverNow } = await read((text, values) => statement(pool, text, values), getSql, key)
        return state === undefined ? undefined : mapTimes(state, timeMap(anchor, serverNow).toLocal)
      })
    },

    update(key, change) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded(
        'circuit-breaker.update',
        (deadline) =>
          new Promise<BreakerState>((resolve, reject) => {
            let queue = queues.get(key)
            if (queue === undefined) queues.set(key, (queue = Object.assign([] as Waiting[], { running: false })))
            queue.push({ change, anchor, deadline, resolve, reject })
            pump(key)
          }),
      )
    },
  }
}
