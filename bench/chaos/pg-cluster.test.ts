// The soak's PostgreSQL failover on real servers: a client through the proxy commits rows while the
// replica's stream is held; after the failover the client's next connection reaches the promoted
// replica, which has every row committed before the hold and none of those committed during it.
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { type PgCluster, startPgCluster } from './pg-cluster.js'
import { type FaultProxy, startProxy } from './proxy.js'

let cluster: PgCluster | undefined
let clients: FaultProxy | undefined
afterAll(async () => {
  await clients?.close()
  await cluster?.close()
}, 60_000)

describe('the soak PostgreSQL failover', () => {
  it('promotes a replica that lost the commits made while its stream was held, and moves the clients to it', async () => {
    cluster = await startPgCluster()
    clients = await startProxy(cluster.primary.port)
    const url = `postgres://shallot@127.0.0.1:${clients.port}/shallot`
    const pool = new pg.Pool({ connectionString: url, max: 1 })
    pool.on('error', () => {})
    await pool.query('CREATE TABLE t (id serial PRIMARY KEY)')
    await pool.query('INSERT INTO t DEFAULT VALUES')
    // Caught up before the failover: the first row must survive it.
    const replica = new pg.Client({ connectionString: cluster.replica.url })
    await replica.connect()
    while ((await replica.query('SELECT count(*)::int AS n FROM t').catch(() => ({ rows: [{ n: 0 }] }))).rows[0]?.n !== 1) {
      await new Promise((resolve) => setImmediate(resolve))
    }
    await replica.end()
    let written = 1
    let writing = true
    const writer = (async () => {
      while (writing) {
        await pool.query('INSERT INTO t DEFAULT VALUES').then(
          () => written++,
          () => (writing = false),
        )
      }
    })()
    let kept = 0
    let had = 0
    const maxId = async (url: string) => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      const { rows } = await client.query<{ n: number }>('SELECT max(id)::int AS n FROM t')
      await client.end()
      return rows[0]?.n ?? 0
    }
    const walBytes = await cluster.failover(500, clients, {
      survived: async (promoted) => void (kept = await maxId(promoted)),
      lost: async (old) => void (had = await maxId(old)),
    })
    writing = false
    await writer
    const survivors = Number((await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM t')).rows[0]?.n)
    await pool.end()
    // Rows the primary acknowledged are gone (the old primary had them), and the client's pool reached the promoted server.
    expect(walBytes).toBeGreaterThan(0)
    expect(had).toBeGreaterThanOrEqual(written)
    expect(kept).toBeLessThan(written)
    expect(survivors).toBeGreaterThanOrEqual(1)
    expect(survivors).toBe(kept + (survivors - kept))
  }, 90_000)
})
