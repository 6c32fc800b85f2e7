// Worker processes for the fleet tests: each runs test/worker.mjs (the BUILT packages) and answers
// JSON commands on stdin with one JSON line each.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const packageDir = fileURLToPath(new URL('../..', import.meta.url))
const workerPath = join(packageDir, 'test', 'worker.mjs')

export interface Result {
  ok: boolean
  replayed: boolean
  value?: { chargeId: string }
  code?: string
  events: string[]
}

export interface Command {
  args?: Record<string, unknown>
  /** Concurrent identical calls of `args`. */
  calls?: number
  /** Instead: one call per order, one after another. */
  orders?: string[]
  runId?: string
}

export interface WorkerConfig {
  url: string
  tablePrefix: string
  leaseMs: number
  holdMs: number
  waitMs?: number
  timeoutMs?: number
  mode?: 'crash-after-effect'
}

export class Worker {
  private buffer = ''
  private waiting = new Map<string, (results: Result[]) => void>()
  private commands = 0
  stderr = ''
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString()
    })
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString()
      for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 1)
        if (!line.startsWith('{')) continue
        const reply = JSON.parse(line) as { id: string; results: Result[] }
        this.waiting.get(reply.id)?.(reply.results)
        this.waiting.delete(reply.id)
      }
    })
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })))
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  send(command: Command): Promise<Result[]> {
    const id = `cmd${++this.commands}`
    const answered = new Promise<Result[]>((resolve, reject) => {
      this.waiting.set(id, resolve)
      void this.exited.then(({ code, signal }) => reject(new Error(`worker exited (${code ?? signal}) before answering: ${this.stderr}`)))
    })
    this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
    return answered
  }

  async one(command: Command): Promise<Result> {
    const [result] = await this.send(command)
    return result as Result
  }
}

export function startWorker(config: WorkerConfig): Promise<Worker> {
  const child = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  const worker = new Worker(child)
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      if (!chunk.toString().startsWith('ready')) return
      child.stdout.off('data', onData)
      resolve(worker)
    }
    child.stdout.on('data', onData)
    void worker.exited.then(({ code, signal }) => reject(new Error(`worker exited before ready (${code ?? signal}): ${worker.stderr}`)))
  })
}

export function startFleet(count: number, config: WorkerConfig): Promise<Worker[]> {
  return Promise.all(Array.from({ length: count }, () => startWorker(config)))
}

export function stopFleet(workers: readonly Worker[]): Promise<unknown> {
  for (const w of workers) {
    w.child.stdin.end()
    w.child.kill('SIGTERM')
  }
  return Promise.all(workers.map((w) => w.exited))
}

/** Polls `check` every few milliseconds until it holds, or fails after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
