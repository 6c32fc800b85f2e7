// One fault of the schedule, done to the rig. Faults on one server never overlap: the soak chains
// them by lane.
import pg from 'pg'
import type { ApprovalRow, LedgerRow } from './checker.js'
import { PREFIX, type Rig, relaxFsync } from './rig.js'
import type { Fault } from './schedule.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** What a failover lost: the WAL the promoted replica never received, the world's requests, writes and the operator's answers in it. */
export interface FailoverLoss {
  readonly lostWalBytes: number
  readonly lostActs: number
  readonly lostWrites: readonly LedgerRow[]
  readonly lostApprovals: readonly ApprovalRow[]
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  client.on('error', () => {})
  await client.connect()
  try {
    return (await client.query<T>(sql, values)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

/** Fails over, and reads from the old primary what the promoted replica never had. */
async function failover(rig: Rig, lagMs: number): Promise<FailoverLoss> {
  let kept = { ledger: 0, acts: 0, approvals: 0 }
  let lostActs = 0
  let lostWrites: LedgerRow[] = []
  let lostApprovals: ApprovalRow[] = []
  const max = (table: string) => `coalesce((SELECT max(id) FROM ${PREFIX}${table}), 0)::int AS ${table}`
  const maxIds = `SELECT ${max('ledger')}, ${max('acts')}, ${max('approvals')}`
  const lostWalBytes = await rig.cluster.failover(lagMs, rig.pgProxy, {
    async survived(url) {
      kept = (await query<typeof kept>(url, maxIds))[0] ?? kept
    },
    async lost(url) {
      lostWrites = await query<LedgerRow>(
        url,
        `SELECT run_id, tool, call_id, idem_key, args, driver FROM ${PREFIX}ledger WHERE id > $1 ORDER BY id`,
        [kept.ledger],
      )
      lostActs = (await query<{ n: number }>(url, `SELECT count(*)::int AS n FROM ${PREFIX}acts WHERE id > $1`, [kept.acts]))[0]?.n ?? 0
      lostApprovals = await query<ApprovalRow>(
        url,
        `SELECT run_id, call_id, tool, args, answer FROM ${PREFIX}approvals WHERE id > $1 ORDER BY id`,
        [kept.approvals],
      )
    },
  })
  return { lostWalBytes, lostActs, lostWrites, lostApprovals }
}

/** The lane a fault waits in: a server's (faults on one server never overlap), or none (worker faults overlap as they may). */
export function laneOf(fault: Fault): string | undefined {
  if (fault.kind.startsWith('redis_')) return 'redis'
  if (fault.kind.startsWith('postgres_')) return 'postgres'
  return undefined
}

async function proxied(proxy: Rig['redisProxy'], fault: Fault): Promise<void> {
  if (fault.kind.endsWith('_cut')) return proxy.cut()
  if (fault.kind.endsWith('_delay')) {
    proxy.delay(fault.latencyMs)
    await sleep(fault.ms)
    return proxy.delay(0)
  }
  // A partition: nothing gets through either way while the servers live; some end with every connection reset.
  proxy.partition()
  await sleep(fault.ms)
  if (fault.latencyMs % 2 === 0) proxy.cut()
  proxy.heal()
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

async function server(rig: Rig, fault: Fault): Promise<FailoverLoss | undefined> {
  switch (fault.kind) {
    case 'redis_kill': {
      const pid = rig.redis.pid
      process.kill(pid, 'SIGKILL')
      while (!gone(pid)) await sleep(20)
      await sleep(fault.ms)
      await rig.redis.restart()
      await relaxFsync(rig.redis.port)
      return undefined
    }
    case 'redis_pause':
      rig.redis.pause()
      await sleep(fault.ms)
      rig.redis.resume()
      return undefined
    case 'postgres_crash':
      await rig.cluster.crash(fault.ms)
      return undefined
    case 'postgres_failover':
      return failover(rig, fault.ms)
    default:
      await proxied(fault.kind.startsWith('redis_') ? rig.redisProxy : rig.pgProxy, fault)
      return undefined
  }
}

/** Does `fault` to the rig and resolves when it is over, with a failover's losses. */
export async function inject(rig: Rig, fault: Fault, graceMs: number): Promise<FailoverLoss | undefined> {
  const { fleet } = rig
  const slot = fault.worker % fleet.size
  switch (fault.kind) {
    case 'worker_kill':
      await fleet.kill(slot)
      return undefined
    case 'worker_pause':
      await fleet.pause(slot, fault.ms)
      return undefined
    case 'worker_term':
      await fleet.term(slot, graceMs)
      return undefined
    case 'rolling_restart':
      for (let each = 0; each < fleet.size; each++) await fleet.term(each, graceMs)
      return undefined
    case 'clock_jump':
      await fleet.jump(slot, fault.ms)
      return undefined
    case 'clock_step_back':
      await fleet.step(slot, -fault.ms)
      return undefined
    default:
      return server(rig, fault)
  }
}
