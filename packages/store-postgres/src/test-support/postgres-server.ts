// A private PostgreSQL for the tests: `initdb` into a temp dir, `pg_ctl start` on 127.0.0.1 and a free
// port, stopped afterwards. As root the server cannot run as root, so every server command runs as
// the `postgres` user (Debian's package creates it) through `runuser`. A missing PostgreSQL fails the
// tests loudly; it is never a skip. A server outlives its test process only if that process is
// SIGKILLed: the next start stops such leftovers (their directory names the owning pid).
import { execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PostgresServer {
  readonly port: number
  /** A connection string for the `shallot` superuser and database (trust authentication on loopback). */
  readonly url: string
  /** `pg_ctl stop -m <mode>`: `fast` ends every session and checkpoints; `immediate` is a crash (WAL recovery on start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>
  /** `pg_ctl start` on the same port and data directory; resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops the server (if running) and removes its directory. */
  close(): Promise<void>
}

/** What {@link startPostgresServer} accepts. */
export interface PostgresServerOptions {
  /** Server settings on top of the defaults, as `-c name=value` (e.g. `{ shared_preload_libraries: 'pg_stat_statements' }`). */
  settings?: Record<string, string>
}

const DIR_PREFIX = 'shallot-pg-'

function binDir(): string {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) {
    throw new Error('PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql, or run .ci/services')
  }
  return join(root, newest, 'bin')
}

const asRoot = process.getuid?.() === 0

/** The command line of a server binary, as the `postgres` user when we are root. */
function command(binary: string, args: string[]): [string, string[]] {
  const path = join(binDir(), binary)
  return asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args]
}

function run(binary: string, args: string[]): Promise<string> {
  const [file, argv] = command(binary, args)
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

function runSync(binary: string, args: string[]): void {
  const [file, argv] = command(binary, args)
  try {
    execFileSync(file, argv, { stdio: 'ignore', timeout: 10_000 })
  } catch {
    // Best effort: the server may be stopped already.
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Stops and removes the servers of test processes that died without cleaning up. */
function reapLeftovers(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue
    const dir = join(tmpdir(), name)
    const owner = Number(existsSync(join(dir, 'owner')) ? readFileSync(join(dir, 'owner'), 'utf8') : Number.NaN)
    if (!Number.isInteger(owner) || alive(owner)) continue
    if (existsSync(join(dir, 'data', 'postmaster.pid'))) runSync('pg_ctl', ['stop', '-D', join(dir, 'data'), '-m', 'immediate', '-w'])
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Starts a private PostgreSQL: a new cluster in a temp dir, listening on 127.0.0.1 and a free port
 * (its socket in the same dir), with a `shallot` superuser and database.
 *
 * @example
 * const pg = await startPostgresServer()
 * afterAll(() => pg.close())
 */
export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  reapLeftovers()
  const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX))
  writeFileSync(join(dir, 'owner'), String(process.pid))
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString())
    chownSync(dir, uid, gid)
  }
  const data = join(dir, 'data')
  const port = await freePort()
  await run('initdb', ['-D', data, '-U', 'shallot', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'])
  const settings = Object.entries(options.settings ?? {}).map(([name, value]) => ` -c ${name}=${value}`)
  const serverOptions = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c max_connections=100 -c shared_buffers=32MB${settings.join('')}`
  const start = () => run('pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '30'])
  let running = false
  // A test process that exits without afterAll must not leave a server behind.
  const reap = () => {
    if (running) runSync('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w'])
  }
  process.once('exit', reap)
  try {
    await start()
    running = true
    await run('createdb', ['-h', dir, '-p', String(port), '-U', 'shallot', 'shallot'])
  } catch (err) {
    reap()
    process.off('exit', reap)
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  const server: PostgresServer = {
    port,
    url: `postgres://shallot@127.0.0.1:${port}/shallot`,
    async stop(mode = 'fast') {
      await run('pg_ctl', ['stop', '-D', data, '-m', mode, '-w', '-t', '30'])
      running = false
    },
    async start() {
      await start()
      running = true
    },
    async close() {
      process.off('exit', reap)
      if (running) await server.stop('immediate')
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}
