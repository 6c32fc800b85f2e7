// A SIGKILL between a human's approval and the checkpoint of the turn it approved, in real
// processes: the worker (test/approval-worker.mjs) imports the BUILT packages (dist), so beforeAll
// runs `tsc -b` for this package and its references first (incremental). No test here sleeps: each
// awaits a real child process to exit.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workerPath = join(packageDir, 'test', 'approval-worker.mjs')

interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
  lines: Array<{ status: string; kind?: string; pending?: string[]; output?: string; effects: number }>
  stderr: string
}

function runWorker(config: Record<string, unknown>): Promise<Exit> {
  const child = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
      resolve({ code, signal, lines, stderr })
    })
  })
}

let dir: string
beforeAll(() => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-b', packageDir, join(packageDir, '../store-sqlite')], { stdio: 'pipe' })
  dir = mkdtempSync(join(tmpdir(), 'shallot-approval-'))
}, 300_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('approval across a SIGKILL', () => {
  it('a process killed after the approved write and before its checkpoint: the next resume never writes again', async () => {
    const base = { db: join(dir, 'state.db'), checkpoints: join(dir, 'r1.json'), leaseMs: 300, waitMs: 20_000 }
    const first = await runWorker({ ...base, mode: 'run' })
    expect(first, first.stderr).toMatchObject({ code: 0 })
    expect(first.lines).toEqual([{ status: 'stopped', kind: 'user_input_required', pending: ['call_9'], effects: 0 }])

    const killed = await runWorker({ ...base, mode: 'kill-after-effect', approvals: { call_9: 'approve' } })
    expect(killed.signal).toBe('SIGKILL')
    expect(killed.lines).toEqual([])
    // The answers were checkpointed before the replay; the turn they approved was not.
    expect(existsSync(base.checkpoints)).toBe(true)
    const snapshot = JSON.parse(readFileSync(base.checkpoints, 'utf8'))
    expect(snapshot.state['shallot.policy'].approvals).toEqual({ call_9: 'approve' })
    expect(snapshot.pendingTurn.turn).toBe(1)

    const resumed = await runWorker({ ...base, mode: 'resume' })
    expect(resumed, resumed.stderr).toMatchObject({ code: 0 })
    expect(resumed.lines).toEqual([expect.objectContaining({ status: 'completed', effects: 1 })])
    // The write's outcome is unknown (it may have happened): the model is told so, nothing runs twice.
    expect(resumed.lines[0]?.output).toContain('outcome_unknown')

    const again = await runWorker({ ...base, mode: 'resume', approvals: { call_9: 'approve' } })
    expect(again.lines).toEqual([expect.objectContaining({ status: 'completed', effects: 1 })])
  }, 120_000)
})
