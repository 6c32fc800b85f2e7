// The soak's worker processes: spawned with the resolve hook, killed, paused, replaced.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { WorkerConfig } from './worker.js'

const hook = fileURLToPath(new URL('resolve-hook.js', import.meta.url))
const script = fileURLToPath(new URL('worker.js', import.meta.url))

export interface FleetProcess {
  readonly child: ChildProcessWithoutNullStreams
  readonly exited: Promise<void>
  /** The last few kilobytes it wrote to stderr, for a report that must say why a worker failed. */
  stderr: string
  outcomes: number
}

/** Starts one worker process and resolves once its BullMQ worker is ready. */
export function startProcess(config: WorkerConfig): Promise<FleetProcess> {
  const child = spawn(process.execPath, ['--import', hook, script, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] })
  const proc: FleetProcess = { child, exited: new Promise((resolve) => child.once('close', () => resolve())), stderr: '', outcomes: 0 }
  child.stderr.on('data', (chunk: Buffer) => {
    proc.stderr = (proc.stderr + chunk.toString()).slice(-4000)
  })
  // A worker killed while the soak writes to it must not crash the soak with EPIPE.
  child.stdin.on('error', () => {})
  let buffer = ''
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        if (line === 'ready') resolve(proc)
        else if (line.startsWith('{')) proc.outcomes++
      }
    })
    void proc.exited.then(() => reject(new Error(`a soak worker exited before it was ready: ${proc.stderr}`)))
  })
}

/** SIGKILL, and resolves once the process is gone. */
export async function killProcess(proc: FleetProcess): Promise<void> {
  proc.child.kill('SIGCONT')
  proc.child.kill('SIGKILL')
  await proc.exited
}

/** SIGTERM (a graceful close), then SIGKILL if it has not exited within `graceMs`. */
export async function stopProcess(proc: FleetProcess, graceMs: number): Promise<void> {
  proc.child.kill('SIGCONT')
  proc.child.kill('SIGTERM')
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs)
  await proc.exited
  clearTimeout(timer)
}
