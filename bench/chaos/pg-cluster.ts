// The soak's PostgreSQL: a primary and an asynchronous streaming replica (its WAL stream through a
// fault proxy), both private, on loopback ports. A failover holds the replica's stream, lets the
// primary commit on alone, kills it and promotes the replica, which has lost those last commits;
// a new replica is then cloned from the new primary. Fsync is off: the faults are process crashes,
// which lose nothing the kernel was handed, and a soak must not wait on the disk.
import { execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { type FaultProxy, startProxy } from './proxy.js'

const asRoot = process.getuid?.() === 0

function binDir(): string {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) throw new Error('PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql')
  return join(root, newest, 'bin')
}

/** Runs a server binary (as the `postgres` user when we are root: the server refuses to run as root). */
function run(binary: string, args: string[]): Promise<string> {
  const path = join(binDir(), binary)
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args]
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.once('error', (err) => reject(new Error(`cannot run ${binary} (${err.message})`)))
    child.once('close', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${binary} ${args.join(' ')} failed (${code}): ${output}`)),
    )
  })
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** One server: its data directory and port. */
export class PgNode {
  running = false
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async make(root: string, name: string): Promise<PgNode> {
    return new PgNode(join(root, name), await freePort())
  }

  get url(): string {
    return `postgres://shallot@127.0.0.1:${this.port}/shallot`
  }

  async start(): Promise<void> {
    const options = [
      `-c listen_addresses=127.0.0.1 -c port=${this.port} -c unix_socket_directories=${this.dir}`,
      '-c max_connections=200 -c shared_buffers=32MB -c fsync=off -c wal_keep_size=256MB -c wal_receiver_timeout=5s',
    ].join(' ')
    await run('pg_ctl', ['start', '-D', this.dir, '-l', `${this.dir}.log`, '-o', options, '-w', '-t', '60'])
    this.running = true
  }

  async stop(mode: 'fast' | 'immediate'): Promise<void> {
    await run('pg_ctl', ['stop', '-D', this.dir, '-m', mode, '-w', '-t', '60'])
    this.running = false
  }

  /** Best effort, synchronous: for the process's exit. */
  reap(): void {
    if (!this.running) return
    const path = join(binDir(), 'pg_ctl')
    const args = ['stop', '-D', this.dir, '-m', 'immediate', '-w']
    try {
      execFileSync(asRoot ? 'runuser' : path, asRoot ? ['-u', 'postgres', '--', path, ...args] : args, { stdio: 'ignore', timeout: 10_000 })
    } catch {
      // Stopped already.
    }
  }
}

async function scalar(url: string, sql: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  client.on('error', () => {})
  await client.connect()
  try {
    const { rows } = await client.query<{ v: string | null }>(sql)
    return rows[0]?.v ?? null
  } finally {
    await client.end().catch(() => {})
  }
}

/** How a failover's losses are counted: what the promoted server has, and what the old primary had beyond it. */
export interface FailoverProbe {
  /** Runs on the promoted server before any client reaches it. */
  survived(url: string): Promise<void>
  /** Runs on the old primary, started again alone after the failover, with everything it had committed. */
  lost(url: string): Promise<void>
}

export interface PgCluster {
  /** The current primary. */
  readonly primary: PgNode
  /** The current replica. */
  readonly replica: PgNode
  /** Crash (`-m immediate`) and restart the primary after `downMs`: WAL recovery, nothing lost. */
  crash(downMs: number): Promise<void>
  /**
   * Fails over to the replica after holding its WAL stream for `lagMs`; `clients` (the proxy the
   * workers connect through) is cut and pointed at the promoted server. Resolves with the WAL bytes
   * the promoted server never received; a new replica is cloned meanwhile, which the next failover waits for.
   */
  failover(lagMs: number, clients: FaultProxy, probe: FailoverProbe): Promise<number>
  close(): Promise<void>
}

/**
 * Starts a primary with a `shallot` superuser and database, and a streaming replica of it.
 *
 * @example
 * const cluster = await startPgCluster()
 * const lostWalBytes = await cluster.failover(1000, storeProxy, { survived: async (url) => {}, lost: async (url) => {} })
 */
export async function startPgCluster(): Promise<PgCluster> {
  const root = mkdtempSync(join(tmpdir(), 'shallot-pg-chaos-'))
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString())
    chownSync(root, id('-u'), id('-g'))
  }
  const nodes: PgNode[] = []
  const reap = () => {
    for (const node of nodes) node.reap()
  }
  process.once('exit', reap)
  let primary = await PgNode.make(root, 'n0')
  nodes.push(primary)
  await run('initdb', ['-D', primary.dir, '-U', 'shallot', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
  await primary.start()
  await run('createdb', ['-h', primary.dir, '-p', String(primary.port), '-U', 'shallot', 'shallot'])
  const stream = await startProxy(primary.port)
  let made = 0

  async function cloneOnce(): Promise<PgNode> {
    const node = await PgNode.make(root, `n${++made}`)
    stream.retarget(primary.port)
    const args = ['-h', '127.0.0.1', '-p', String(stream.port), '-U', 'shallot', '-D', node.dir, '-R', '-X', 'stream', '-c', 'fast']
    await run('pg_basebackup', args)
    nodes.push(node)
    try {
      await node.start()
    } catch (err) {
      nodes.splice(nodes.indexOf(node), 1)
      throw err
    }
    return node
  }

  /** A new replica of the primary; tried again while a fault on the primary breaks the copy (a crash mid-backup). */
  async function cloneReplica(): Promise<PgNode> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await cloneOnce()
      } catch (err) {
        if (attempt >= 10) throw err
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    }
  }

  let replica = await cloneReplica()
  let nextReplica = Promise.resolve(replica)

  return {
    get primary() {
      return primary
    },
    get replica() {
      return replica
    },
    async crash(downMs) {
      await primary.stop('immediate')
      await new Promise((resolve) => setTimeout(resolve, downMs))
      await primary.start()
    },
    async failover(lagMs, clients, probe) {
      // The last failover's new replica must stream before this one can fail over to it.
      replica = await nextReplica
      stream.partition()
      await new Promise((resolve) => setTimeout(resolve, lagMs))
      await primary.stop('immediate')
      // The held WAL is dropped with the stream: the replica never sees those commits.
      stream.cut()
      const received = await scalar(replica.url, 'SELECT pg_last_wal_receive_lsn()::text AS v').catch(() => null)
      await run('pg_ctl', ['promote', '-D', replica.dir, '-w', '-t', '60'])
      const old = primary
      primary = replica
      await probe.survived(primary.url)
      clients.retarget(primary.port)
      clients.cut()
      stream.heal()
      // The old primary, alone on its port (no client knows it any more), says what the failover lost.
      await old.start()
      const written = await scalar(old.url, 'SELECT pg_current_wal_lsn()::text AS v').catch(() => null)
      await probe.lost(old.url)
      await old.stop('immediate')
      rmSync(old.dir, { recursive: true, force: true })
      nodes.splice(nodes.indexOf(old), 1)
      const walBytes =
        written === null || received === null
          ? Number.NaN
          : Number(await scalar(primary.url, `SELECT pg_wal_lsn_diff('${written}', '${received}')::text AS v`))
      // A new replica is cloned while the fleet runs on; the next failover waits for it.
      nextReplica = cloneReplica()
      nextReplica.catch(() => {})
      return walBytes
    },
    async close() {
      await nextReplica.catch(() => {})
      process.off('exit', reap)
      for (const node of nodes) if (node.running) await node.stop('immediate').catch(() => {})
      await stream.close()
      rmSync(root, { recursive: true, force: true })
    },
  }
}
