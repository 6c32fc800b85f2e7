import { type ChildProcess, spawn } from 'node:child_process'
import { connect, createServer } from 'node:net'

/** A redis-server child process on 127.0.0.1. */
export interface PrivateRedis {
  readonly port: number
  stop(): Promise<void>
  restart(): Promise<void>
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))))
    })
  })
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => socket.write('PING\r\n'))
    socket.once('error', () => resolve(false))
    socket.once('data', (chunk) => {
      socket.destroy()
      resolve(chunk.toString().startsWith('+PONG'))
    })
  })
}

/**
 * Starts `redis-server` with an append-only file in `dir` (records survive a restart) and resolves
 * once it answers PING.
 *
 * @example
 * const redis = await startPrivateRedis(dir)
 */
export async function startPrivateRedis(dir: string): Promise<PrivateRedis> {
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--dir', dir, '--loglevel', 'warning']
  let child: ChildProcess
  const launch = async () => {
    child = spawn(process.env.REDIS_SERVER ?? 'redis-server', args, { stdio: 'ignore' })
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (err) =>
        reject(new Error(`cannot start redis-server (${err.message}); install it: apt-get install redis-server`)),
      )
    })
    failed.catch(() => {})
    const deadline = Date.now() + 10_000
    while (!(await Promise.race([ping(port), failed]))) {
      if (Date.now() > deadline) throw new Error('redis-server did not answer PING within 10 s')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  await launch()
  process.once('exit', () => child.kill('SIGKILL'))
  return {
    port,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
    restart: launch,
  }
}
