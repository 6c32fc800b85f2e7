// Worker processes for the fleet tests: each runs test/worker.mjs (the BUILT packages) and answers
// JSON commands on stdin with one JSON line each. Helpers to count side effects and to poll.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const packageDir = fileURLToPath(new URL('../..', import.meta.url))
const workerPath = join(packageDir, 'test', 'worker.mjs')

export interface Result {
  ok: boolean
  replayed: boolean
  value?: { chargeId: string }
  code?: string
  retryAfterMs?: number
  events: string[]
}

export interface Command {
  tool: 'charge_card' | 'lookup'
  args: Record<string, unknown>
  calls?: number
  runId?: string
  lookupFails?: boolean
  /** How long the tools of this command hold before answering; default the worker's `holdMs`. */
  holdMs?: number
}

export interface WorkerConfig {
  port: number
  prefix: string
  effects: string
  leaseMs: number
  holdMs: number
  cooldownMs: number
  /** The stores' deadline per Redis command; generous, so a loaded CI machine does not read as a sick Redis. */
  timeoutMs?: number
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
      let end = this.buffer.indexOf('\n')
      while (end >= 0) {
        const line = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 1)
        if (line.startsWith('{')) {
          const reply = JSON.parse(line) as { id: string; results: Result[] }
          this.waiting.get(reply.id)?.(reply.results)
          this.waiting.delete(reply.id)
        }
        end = this.buffer.indexOf('\n')
      }
    })
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })))
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  send(command: Command): Promise<Result[]> {
    const id = `cmd${++this.commands}`
    const answered = new Promise<Result[]>((resolve) => this.waiting.set(id, resolve))
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

export async function startFleet(count: number, config: WorkerConfig): Promise<Worker[]> {
  return Promise.all(Array.from({ length: count }, () => startWorker(config)))
}

export function stopFleet(workers: readonly Worker[]): Promise<unknown> {
  for (const w of workers) {
    w.child.kill('SIGCONT')
    w.child.stdin.end()
    w.child.kill('SIGTERM')
  }
  return Promise.all(workers.map((w) => w.exited))
}

/** How many times `what` happened in the world (lines of the effects file). */
export function effects(file: string, what: string): number {
  if (!existsSync(file)) return 0
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(`${what} `)).length
}

/** Polls `check` every few milliseconds until it holds, or fails after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** Splits `total` calls over `workers` as evenly as possible. */
export const spread = (total: number, workers: number) =>
  Array.from({ length: workers }, (_, i) => Math.floor(total / workers) + (i < total % workers ? 1 : 0))
