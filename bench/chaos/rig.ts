// What a soak runs on: a private Redis (append-only file) and a PostgreSQL primary with a streaming
// replica, each behind a fault proxy the workers connect through, and the fleet of worker processes.
// The soak itself (enqueuing, gathering the history) talks to the servers directly.
import { postgresStores } from '@shallot/store-postgres'
import { Redis } from 'ioredis'
import pg from 'pg'
import { type RedisServer, startRedisServer } from '../../packages/store-redis/src/test-support/redis-server.js'
import { Fleet } from './fleet.js'
import { type PgCluster, startPgCluster } from './pg-cluster.js'
import { type FaultProxy, startProxy } from './proxy.js'
import type { WorkerConfig } from './worker.js'
import { worldTables } from './world.js'

export const PREFIX = 'chaos_'

export interface Rig {
  readonly redis: RedisServer
  readonly cluster: PgCluster
  /** The workers' way to Redis and to the PostgreSQL primary. */
  readonly redisProxy: FaultProxy
  readonly pgProxy: FaultProxy
  readonly fleet: Fleet
  readonly queue: string
  /** With planted runs: a worker of their own on a queue of their own, so no plant's crash reaches the fleet's runs. */
  readonly planted?: { readonly fleet: Fleet; readonly queue: string }
  close(): Promise<void>
}

export interface RigOptions {
  readonly queue: string
  readonly workers: number
  readonly skews: readonly number[]
  readonly concurrency: number
  readonly lockMs: number
  /** The run claim's lease: longer than any freeze the soak injects (a worker paused past its job lock). */
  readonly claimMs: number
  readonly plant: boolean
}

/**
 * Redis writes its append-only file before it answers, so a SIGKILL loses nothing it acknowledged;
 * fsync on every write would guard against a power cut the soak never injects, at the disk's pace.
 */
export async function relaxFsync(port: number): Promise<void> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 3 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.config('SET', 'appendfsync', 'no')
  } finally {
    client.disconnect()
  }
}

async function setUp(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  try {
    await postgresStores({ pool, tablePrefix: PREFIX }).migrate()
    for (const sql of worldTables(PREFIX)) await pool.query(sql)
  } finally {
    await pool.end()
  }
}

/**
 * Starts the servers, their proxies, the schema and the fleet.
 *
 * @example
 * const rig = await startRig({ queue: 'chaos1', workers: 3, skews: [0, 0, 0], concurrency: 16, lockMs: 2000, claimMs: 8000, plant: false })
 */
export async function startRig(options: RigOptions): Promise<Rig> {
  const redis = await startRedisServer({ persist: true })
  await relaxFsync(redis.port)
  // The workers start while PostgreSQL does: they reach it through its proxy, pointed at the primary once it is up.
  const [redisProxy, pgProxy] = await Promise.all([startProxy(redis.port), startProxy(0)])
  const config = (skewMs: number, queue = options.queue, concurrency = options.concurrency): WorkerConfig => ({
    redisPort: redisProxy.port,
    pgUrl: `postgres://shallot@127.0.0.1:${pgProxy.port}/shallot`,
    prefix: PREFIX,
    queue,
    concurrency,
    lockMs: options.lockMs,
    claimMs: options.claimMs,
    stalledMs: Math.floor(options.lockMs / 2),
    leaseMs: 1500,
    parkMs: 1000,
    holdMs: 100,
    skewMs,
  })
  const plantedQueue = `${options.queue}p`
  // One worker for the planted runs: the plants that kill it are taken over by its replacement, as soon as
  // its job lock and run claim lapse (2 s each: a harness for the checker, not the fleet under test).
  const plantedConfig = () => ({ ...config(0, plantedQueue, 4), lockMs: 2000, claimMs: 2000, stalledMs: 1000, maxStalledCount: 5 })
  const [cluster, fleet, plantedFleet] = await Promise.all([
    startPgCluster().then(async (started) => {
      pgProxy.retarget(started.primary.port)
      await setUp(started.primary.url)
      return started
    }),
    Fleet.start(options.workers, (_slot, skewMs) => config(skewMs), options.skews),
    options.plant ? Fleet.start(1, plantedConfig, [0]) : undefined,
  ])
  const planted = plantedFleet === undefined ? undefined : { fleet: plantedFleet, queue: plantedQueue }
  return {
    redis,
    cluster,
    redisProxy,
    pgProxy,
    fleet,
    queue: options.queue,
    ...(planted === undefined ? {} : { planted }),
    async close() {
      await Promise.all([fleet.close(10_000), planted?.fleet.close(10_000)])
      await Promise.all([redisProxy.close(), pgProxy.close()])
      await Promise.all([redis.close(), cluster.close()])
    },
  }
}
