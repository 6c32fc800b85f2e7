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

/** A command sent with {@link Worker.hold}: its calls that reach the tool wait there until {@link Worker.release}. */
export interface Held {
  /** Resolves once each call was refused or waits in the tool: none of them can reach the tool later. */
  readonly decided: Promise<void>
  readonly results: Promise<Result[]>
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
  private deciding = new Map<string, () => void>()
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
        if (line.startsWith('{')) this.answer(JSON.parse(line) as { id: string; results?: Result[]; decided?: true })
        end = this.buffer.indexOf('\n')
      }
    })
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })))
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  private answer(reply: { id: string; results?: Result[]; decided?: true }): void {
    if (reply.decided) {
      this.deciding.get(reply.id)?.()
      this.deciding.delete(reply.id)
      return
    }
    this.waiting.get(reply.id)?.(reply.results ?? [])
    this.waiting.delete(reply.id)
  }

  private post(command: Command & { held?: true }): { id: string; results: Promise<Result[]> } {
    const id = `cmd${++this.commands}`
    const results = new Promise<Result[]>((resolve) => this.waiting.set(id, resolve))
    this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
    return { id, results }
  }

  send(command: Command): Promise<Result[]> {
    return this.post(command).results
  }

  /** Sends `command` with its tool calls held in the tool until {@link release} (see {@link Held}). */
  hold(command: Command): Held {
    const { id, results } = this.post({ ...command, held: true })
    // The worker answers on stdout, so no "decided" line can come before this listener is set.
    const decided = new Promise<void>((resolve) => this.deciding.set(id, resolve))
    return { decided, results }
  }

  /** Lets the calls of the last held command out of the tool. */
  release(): void {
    this.child.stdin.write(`${JSON.stringify({ release: true })}\n`)
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
