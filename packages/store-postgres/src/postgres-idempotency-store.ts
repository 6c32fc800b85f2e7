import { type BeginResult, type IdempotencyStore, parseStoredResult } from '@shallot/idempotency'
import { type PostgresStoreContext, type Query, statement, transaction } from './postgres-store-context.js'
import { postgresUnavailable } from './store-unavailable.js'
import { checked, idempotencyRowSchema, nowSchema } from './stored-values.js'
import { NOW } from './tables.js'

/** Expired rows dropped per sweep, and how many new keys between two sweeps: four rows a key keeps up, a short statement. */
const SWEEP_BATCH = 64
const SWEEP_EVERY = 16
/** A token is a positive bigint; anything else can own no row (and must not reach a `::bigint` cast). */
const TOKEN = /^[1-9]\d{0,18}$/

/** The store's statements on its tables: claim, lock, replace, lapse, retake, sweep and the three settles. */
function idempotencySql(tables: PostgresStoreContext['tables']) {
  const t = tables.idempotency
  const fresh = `nextval('${tables.tokens.replaceAll("'", "''")}')`

  const claimSql = `INSERT INTO ${t} (key, args_hash, state, token, lease_until, expires_at, result)
    SELECT $2, $3, 'pending', ${fresh}, n.t + $4, n.t + $4 + $5, NULL FROM (SELECT ${NOW} AS t) n
    ON CONFLICT (key) DO NOTHING RETURNING token::text AS token`
  const lockSql = `SELECT args_hash, state, token::text AS token, lease_until::text AS lease_until,
    expires_at::text AS expires_at, result, (${NOW})::text AS now FROM ${t} WHERE key = $2 FOR UPDATE`
  const replaceSql = `UPDATE ${t} SET args_hash = $3, state = 'pending', token = ${fresh}, lease_until = n.t + $4,
    expires_at = n.t + $4 + $5, result = NULL FROM (SELECT ${NOW} AS t) n WHERE key = $2 RETURNING token::text AS token`
  const lapseSql = `UPDATE ${t} SET state = 'lapsed' WHERE key = $1`
  const retakeSql = `UPDATE ${t} SET state = 'pending', token = ${fresh}, lease_until = n.t + $3, expires_at = n.t + $3 + $4
    FROM (SELECT ${NOW} AS t) n WHERE key = $2 RETURNING token::text AS token`
  const sweepSql = `DELETE FROM ${t} WHERE key IN (SELECT key FROM ${t} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`
  const owner = `key = $2 AND token = $3::bigint AND state = 'pending' AND expires_at > ${NOW}`
  const completeSql = `UPDATE ${t} SET state = 'done', result = $4, expires_at = ${NOW} + $5 WHERE ${owner}`
  const unknownSql = `UPDATE ${t} SET state = 'unknown', expires_at = ${NOW} + $4 WHERE ${owner}`
  const releaseSql = `DELETE FROM ${t} WHERE ${owner}`
  return { claimSql, lockSql, replaceSql, lapseSql, retakeSql, sweepSql, completeSql, unknownSql, releaseSql }
}

/**
 * Every SWEEP_EVERY-th new key of this process drops a batch of expired rows: the table keeps up with
 * its writes without a second statement on every write. A sweep that fails is only late housekeeping.
 */
function sweeper({ pool, log, nowParam }: PostgresStoreContext, sweepSql: string): () => Promise<void> {
  let claims = 0
  return async function sweepNow() {
    if (++claims % SWEEP_EVERY !== 0) return
    try {
      await statement(pool, sweepSql, [nowParam()])
    } catch (err) {
      log.warn({ err }, 'could not sweep expired idempotency records; the next sweep tries again')
    }
  }
}

function tokenOf(rows: Array<Record<string, unknown>>): string {
  const token = rows[0]?.token
  if (typeof token !== 'string' || !TOKEN.test(token)) throw new TypeError('the server answered no token')
  return token
}

/**
 * The idempotency store of `postgresStores()`: `begin` is one transaction that claims the key or
 * locks its row (`FOR UPDATE`) and decides on it; every settle is one guarded statement. Tokens come
 * from one sequence, so they only grow. A worker whose lease ran out is fenced out once anyone was
 * told so (the row becomes `lapsed`). Leases and TTLs run on the server's clock. Every row read is
 * validated: a corrupt record answers `unknown (corrupt)` and stays, so `idempotency()` refuses the
 * call with `outcome_unknown` until the row expires or someone deletes it; never replayed, never run again.
 *
 * @example
 * const { idempotency: store } = postgresStores({ pool })
 * createStack({ tools, middleware: [idempotency({ store, scope: 'tenant-a' })] })
 */
function corrupt(log: PostgresStoreContext['log'], key: string, problem: string): BeginResult {
  log.warn({ key, problem }, 'idempotency record in PostgreSQL is corrupt; identical calls are refused until it expires or is deleted')
  return { status: 'unknown', reason: 'corrupt', problem }
}

export function postgresIdempotencyStore(context: PostgresStoreContext): IdempotencyStore {
  const { pool, tables, bounded, log, nowParam } = context
  const { claimSql, lockSql, replaceSql, lapseSql, retakeSql, sweepSql, completeSql, unknownSql, releaseSql } = idempotencySql(tables)
  const sweepNow = sweeper(context, sweepSql)

  /** Decides on the locked row of `key`; `undefined` when the row vanished between claim and lock. */
  async function decide(query: Query, key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<BeginResult | undefined> {
    const raw = (await query(lockSql, [nowParam(), key])).rows[0]
    if (raw === undefined) return undefined
    const now = checked(nowSchema, raw.now)
    if ('problem' in now) throw new TypeError(`the server answered no time: ${now.problem}`)
    const at = now.value
    // A row past its expiry is gone, whatever is in it: what TTL cleanup would have deleted anyway.
    const expiresAt = checked(idempotencyRowSchema.shape.expires_at, raw.expires_at)
    if ('value' in expiresAt && expiresAt.value <= at) {
      const replaced = await query(replaceSql, [nowParam(), key, argsHash, leaseMs, ttlMs])
      await query(sweepSql, [nowParam()])
      return { status: 'new', token: tokenOf(replaced.rows) }
    }
    const row = checked(idempotencyRowSchema, raw)
    if ('problem' in row) return corrupt(log, key, row.problem)
    const record = row.value
    // Only a done row holds a result; one elsewhere means another writer had a hand in this row.
    if (record.state !== 'done' && record.result !== null) return corrupt(log, key, `a ${record.state} row holds a result`)
    if (record.args_hash !== argsHash) return { status: 'mismatch' }
    switch (record.state) {
      case 'done': {
        const stored = parseStoredResult(record.result)
        return 'result' in stored ? { status: 'done', result: stored.result } : corrupt(log, key, stored.problem)
      }
      case 'unknown':
        return { status: 'unknown', reason: 'recorded' }
      case 'lapsed':
        return { status: 'unknown', reason: 'lease_expired' }
      case 'pending':
        if (record.lease_until > at) return { status: 'in_flight' }
        // Telling anyone the outcome is unknown fences the owner out: the answer never flips to done.
        await query(lapseSql, [key])
        return { status: 'unknown', reason: 'lease_expired' }
    }
  }

  function settle(op: 'complete' | 'release' | 'markUnknown', sql: string, key: string, token: string, extra: readonly unknown[]) {
    if (!TOKEN.test(token)) return Promise.resolve(false)
    return bounded(`idempotency.${op}`, async () => {
      const { rowCount } = await statement(pool, sql, [nowParam(), key, token, ...extra])
      return rowCount === 1
    })
  }

  // A begin that answered after its deadline may have claimed the key for nobody: give it back.
  function releaseLate(key: string, begun: BeginResult): void {
    if (begun.status !== 'new') return
    settle('release', releaseSql, key, begun.token, []).then(
      (released) => log.info({ key, released }, 'released the key of a begin that answered after its deadline'),
      (err: unknown) => log.warn({ key, err }, 'could not release the key of a begin that answered after its deadline'),
    )
  }

  /**
   * A new key costs one statement (its claim, and now and then a sweep); a key someone holds, one
   * transaction that locks its row and decides on it.
   */
  async function begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<BeginResult> {
    return bounded(
      'idempotency.begin',
      async (signal): Promise<BeginResult> => {
        const claimed = await statement(pool, claimSql, [nowParam(), key, argsHash, leaseMs, ttlMs])
        if (claimed.rows.length > 0) {
          const token = tokenOf(claimed.rows)
          await sweepNow()
          return { status: 'new', token }
        }
        return transaction(pool, signal, async (query) => {
          // A row released between our claim and our lock is free again: claim once more.
          for (let attempt = 0; attempt < 3; attempt++) {
            const claimed = await query(claimSql, [nowParam(), key, argsHash, leaseMs, ttlMs])
            if (claimed.rows.length > 0) return { status: 'new', token: tokenOf(claimed.rows) }
            const decided = await decide(query, key, argsHash, leaseMs, ttlMs)
            if (decided !== undefined) return decided
          }
          throw postgresUnavailable('idempotency.begin', 'the record kept changing under the claim')
        })
      },
      (late) => releaseLate(key, late),
    )
  }

  /**
   * Takes over the locked row of `key` if it is a live, well-formed unknown outcome of `argsHash`
   * (unknown, lapsed, or pending past its lease): pending again under a new token from the sequence.
   * A reclaim that answered after its deadline leaves the row pending until its lease runs out.
   */
  async function reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<string | undefined> {
    return bounded('idempotency.reclaim', (signal) =>
      transaction(pool, signal, async (query) => {
        const raw = (await query(lockSql, [nowParam(), key])).rows[0]
        if (raw === undefined) return undefined
        const now = checked(nowSchema, raw.now)
        if ('problem' in now) throw new TypeError(`the server answered no time: ${now.problem}`)
        const row = checked(idempotencyRowSchema, raw)
        if ('problem' in row) return undefined
        const { state, args_hash, result, lease_until, expires_at } = row.value
        if (expires_at <= now.value || args_hash !== argsHash || result !== null) return undefined
        if (state !== 'unknown' && state !== 'lapsed' && !(state === 'pending' && lease_until <= now.value)) return undefined
        return tokenOf((await query(retakeSql, [nowParam(), key, leaseMs, ttlMs])).rows)
      }),
    )
  }

  return {
    begin,
    reclaim,
    complete: (key, token, result, ttlMs) => settle('complete', completeSql, key, token, [JSON.stringify(result), ttlMs]),
    release: (key, token) => settle('release', releaseSql, key, token, []),
    markUnknown: (key, token, ttlMs) => settle('markUnknown', unknownSql, key, token, [ttlMs]),
  }
}
