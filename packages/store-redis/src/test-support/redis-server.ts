// A private redis-server for one test file: a real server on 127.0.0.1 and a free port, started as a
// child process and stopped in afterAll, so tests never depend on an outside service and may stop,
// pause or restart it mid-test. A missing redis-server fails the test loudly (it is never skipped).
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** The server's process id (it changes on restart). */
  readonly pid: number
  /** SIGSTOP: the server keeps its connections but answers nothing (a "slow" Redis). */
  pause(): void
  /** SIGCONT after {@link pause}. */
  resume(): void
  /** Shuts the server down (SIGTERM; with `persist` it writes its append-only file first) and waits for it to exit. */
  stop(): Promise<void>
  /** Starts the server again on the same port and directory, and waits until it answers PING. */
  restart(): Promise<void>
  /** Stops the server and removes its directory. */
  close(): Promise<void>
}

export interface RedisServerOptions {
  /** Keep data across restarts in an append-only file synced on every write. Default false (`--save '' --appendonly no`). */
  persist?: boolean
}

const BINARY = process.env.REDIS_SERVER ?? 'redis-server'

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

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    let reply = ''
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.once('error', () => done(false))
    socket.on('data', (chunk) => {
      reply += chunk.toString()
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'))
    })
    socket.once('connect', () => socket.write('PING\r\n'))
  })
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/**
 * Starts a private `redis-server` and resolves once it answers PING (polled, never a fixed sleep).
 *
 * @example
 * const redis = await startRedisServer()
 * afterAll(() => redis.close())
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'shallot-redis-'))
  const port = await freePort()
  const persistence = options.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir, '--loglevel', 'warning']
  let child: ChildProcess

  async function launch(): Promise<void> {
    const started = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child = started
    let output = ''
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const failed = new Promise<never>((_, reject) => {
      started.once('error', (err) =>
        reject(new Error(`cannot start ${BINARY} (${err.message}): install Redis (apt-get install redis-server) or run .ci/services`)),
      )
      started.once('exit', (code, signal) => reject(new Error(`redis-server exited early (${code ?? signal}): ${output}`)))
    })
    failed.catch(() => {})
    const deadline = Date.now() + 10_000
    for (;;) {
      const answered = await Promise.race([ping(port), failed])
      if (answered) return
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${output}`)
      // Polling a starting process: the one wait here is between two PINGs.
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  await launch()
  // A test process that dies without afterAll must not leave a server behind.
  const reap = () => child.kill('SIGKILL')
  process.once('exit', reap)
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child.pid ?? -1
    },
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    async stop() {
      child.kill('SIGCONT')
      child.kill('SIGTERM')
      await exited(child)
    },
    async restart() {
      await launch()
    },
    async close() {
      process.off('exit', reap)
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}
