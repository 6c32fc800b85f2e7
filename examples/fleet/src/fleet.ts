import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { CallSummary, WorkerCommand, WorkerConfig } from './protocol.js'

const workerPath = fileURLToPath(new URL('./worker.js', import.meta.url))

/** One worker process and the commands it has not answered yet. */
export class FleetWorker {
  private buffer = ''
  private readonly waiting = new Map<string, (results: CallSummary[]) => void>()
  private sent = 0
  readonly exited: Promise<void>

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString()
      for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 1)
        if (!line.startsWith('{')) continue
        const reply = JSON.parse(line) as { id: string; results: CallSummary[] }
        this.waiting.get(reply.id)?.(reply.results)
        this.waiting.delete(reply.id)
      }
    })
    this.exited = new Promise((resolve) => child.once('close', () => resolve()))
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  send(command: Omit<WorkerCommand, 'id'>): Promise<CallSummary[]> {
    const id = `c${++this.sent}`
    const answered = new Promise<CallSummary[]>((resolve) => this.waiting.set(id, resolve))
    this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
    return answered
  }

  async one(command: Omit<WorkerCommand, 'id'>): Promise<CallSummary> {
    return (await this.send(command))[0] as CallSummary
  }
}

/**
 * Starts `count` worker processes and resolves once each is connected to Redis.
 *
 * @example
 * const workers = await startFleet(8, { port, effects, leaseMs: 1500, holdMs: 200, cooldownMs: 500 })
 */
export function startFleet(count: number, config: WorkerConfig): Promise<FleetWorker[]> {
  return Promise.all(
    Array.from({ length: count }, () => {
      const worker = new FleetWorker(spawn(process.execPath, [workerPath, JSON.stringify(config)]))
      let stderr = ''
      worker.child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      return new Promise<FleetWorker>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          if (!chunk.toString().startsWith('ready')) return
          worker.child.stdout.off('data', onData)
          resolve(worker)
        }
        worker.child.stdout.on('data', onData)
        void worker.exited.then(() => reject(new Error(`a worker exited before it was ready: ${stderr}`)))
      })
    }),
  )
}

/** Ends every worker (continuing a stopped one first) and waits for them to exit. */
export async function stopFleet(workers: readonly FleetWorker[]): Promise<void> {
  for (const w of workers) {
    w.child.kill('SIGCONT')
    w.child.stdin.end()
    w.child.kill('SIGTERM')
  }
  await Promise.all(workers.map((w) => w.exited))
}

/** How many side effects `what` (e.g. `charge o-1`) the world saw. */
export function effects(file: string, what: string): number {
  if (!existsSync(file)) return 0
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(`${what} `)).length
}

/** Splits `total` calls over `workers` as evenly as possible. */
export const spread = (total: number, workers: number): number[] =>
  Array.from({ length: workers }, (_, i) => Math.floor(total / workers) + (i < total % workers ? 1 : 0))

/** Polls `check` every 5 ms until it holds; fails after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
