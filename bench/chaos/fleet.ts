// The soak's worker processes, one per slot, kept alive as a supervisor keeps them: a process that
// exits (killed, stopped gracefully, or crashed on its own) is replaced in its slot at once. Each
// slot is a host whose wall clock is off by its skew, which steps move and restarts keep.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { WorkerConfig } from './worker.js'

const hook = fileURLToPath(new URL('resolve-hook.js', import.meta.url))
const script = fileURLToPath(new URL('worker.js', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface FleetProcess {
  readonly child: ChildProcessWithoutNullStreams
  readonly exited: Promise<void>
  /** The last few kilobytes it wrote to stderr, for a report that must say why a worker failed. */
  stderr: string
}

/** Starts one worker process and resolves once its BullMQ worker is ready. */
function startProcess(config: WorkerConfig): Promise<FleetProcess> {
  const child = spawn(process.execPath, ['--import', hook, script, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] })
  const proc: FleetProcess = { child, exited: new Promise((resolve) => child.once('close', () => resolve())), stderr: '' }
  child.stderr.on('data', (chunk: Buffer) => {
    proc.stderr = (proc.stderr + chunk.toString()).slice(-4000)
  })
  // A worker killed while the soak writes to it must not crash the soak with EPIPE.
  child.stdin.on('error', () => {})
  let buffer = ''
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer = (buffer + chunk.toString()).slice(-10_000)
      if (buffer.includes('ready\n')) resolve(proc)
    })
    void proc.exited.then(() => reject(new Error(`a soak worker exited before it was ready: ${proc.stderr}`)))
  })
}

/**
 * The fleet: `workers` processes, each replaced when it exits until {@link Fleet.close}.
 *
 * @example
 * const fleet = await Fleet.start(3, (slot, skewMs) => ({ ...config, skewMs }), [0, 1500, -800])
 * await fleet.kill(1) // resolves once slot 1 runs a new, ready process
 */
export class Fleet {
  private readonly procs: FleetProcess[] = []
  private readonly ready: Promise<void>[] = []
  private closing = false
  /** Processes that exited without the soak stopping them (a planted crash), each replaced. */
  crashes = 0
  /** Graceful stops that did not finish within their grace and were SIGKILLed. */
  forced = 0
  private stopping = new Set<FleetProcess>()

  private constructor(
    private readonly configOf: (slot: number, skewMs: number) => WorkerConfig,
    private readonly skews: number[],
  ) {}

  static async start(workers: number, configOf: (slot: number, skewMs: number) => WorkerConfig, skews: readonly number[]): Promise<Fleet> {
    const fleet = new Fleet(configOf, [...skews])
    for (let slot = 0; slot < workers; slot++) fleet.ready[slot] = fleet.spawn(slot)
    await Promise.all(fleet.ready)
    return fleet
  }

  get size(): number {
    return this.skews.length
  }

  private async spawn(slot: number): Promise<void> {
    // A worker that cannot start (its servers unreachable) is tried again, less and less often.
    for (let backoffMs = 250; ; backoffMs = Math.min(2 * backoffMs, 5000)) {
      try {
        const proc = await startProcess(this.configOf(slot, this.skews[slot] ?? 0))
        this.procs[slot] = proc
        void proc.exited.then(() => {
          if (this.closing) return
          if (!this.stopping.delete(proc)) this.crashes++
          this.ready[slot] = this.spawn(slot)
        })
        return
      } catch {
        if (this.closing) return
        await sleep(backoffMs)
      }
    }
  }

  private async stop(slot: number, signal: 'SIGKILL' | 'SIGTERM', graceMs = 0): Promise<void> {
    await this.ready[slot]
    const proc = this.procs[slot] as FleetProcess
    this.stopping.add(proc)
    proc.child.kill('SIGCONT')
    proc.child.kill(signal)
    const timer =
      signal === 'SIGTERM'
        ? setTimeout(() => {
            this.forced++
            proc.child.kill('SIGKILL')
          }, graceMs)
        : undefined
    await proc.exited
    clearTimeout(timer)
    // The supervisor's replacement, started when the process exited.
    await this.ready[slot]
  }

  /** SIGKILL, then a new process in the slot. */
  kill(slot: number): Promise<void> {
    return this.stop(slot, 'SIGKILL')
  }

  /** SIGTERM (a graceful close: running jobs finish), SIGKILL after `graceMs`, then a new process. */
  term(slot: number, graceMs: number): Promise<void> {
    return this.stop(slot, 'SIGTERM', graceMs)
  }

  /** SIGSTOP for `ms`, then SIGCONT: a process frozen (a GC pause, a VM migration) past its leases. */
  async pause(slot: number, ms: number): Promise<void> {
    await this.ready[slot]
    const proc = this.procs[slot] as FleetProcess
    proc.child.kill('SIGSTOP')
    await sleep(ms)
    proc.child.kill('SIGCONT')
  }

  /** Moves the agent's clock of the slot's process forward. */
  async jump(slot: number, ms: number): Promise<void> {
    await this.ready[slot]
    this.procs[slot]?.child.stdin.write(`${JSON.stringify({ jump: ms })}\n`)
  }

  /** Steps the slot's wall clock by `ms` (back when negative); a replacement process keeps it. */
  async step(slot: number, ms: number): Promise<void> {
    await this.ready[slot]
    this.skews[slot] = (this.skews[slot] ?? 0) + ms
    this.procs[slot]?.child.stdin.write(`${JSON.stringify({ step: ms })}\n`)
  }

  /** Stops every process (SIGTERM, SIGKILL after `graceMs`) without replacing it. */
  async close(graceMs: number): Promise<void> {
    this.closing = true
    await Promise.all(this.ready)
    await Promise.all(
      this.procs.map(async (proc) => {
        proc.child.kill('SIGCONT')
        proc.child.kill('SIGTERM')
        const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs)
        await proc.exited
        clearTimeout(timer)
      }),
    )
  }
}
