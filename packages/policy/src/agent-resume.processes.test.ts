// A SIGKILL between a human's approval and the checkpoint of the turn it approved, in real
// processes: the worker (test/approval-worker.mjs) imports the BUILT packages (dist), which vitest's
// global setup builds before any test file starts (.ci/vitest-build.ts). No test here sleeps: each
// awaits a real child process to exit.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const workerPath = join(packageDir, 'test', 'approval-worker.mjs')

interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
  lines: Array<{ status: string; kind?: string; pending?: string[]; output?: string; code?: string; message?: string; effects: number }>
  stderr: string
}

function runWorker(
  config: Record<string, unknown>,
  onLine?: (line: Record<string, unknown>, stdin: NodeJS.WritableStream) => void,
): Promise<Exit> {
  const child = spawn(process.execPath, [workerPath, JSON.stringify(config)], { cwd: packageDir })
  let stdout = ''
  let seen = 0
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    // Each whole line as it arrives, so a test can act while the worker is still running.
    const lines = stdout.split('\n')
    for (; seen < lines.length - 1; seen++) if (lines[seen]?.startsWith('{')) onLine?.(JSON.parse(lines[seen] as string), child.stdin)
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
        .filter((line) => line.event === undefined)
      resolve({ code, signal, lines, stderr })
    })
  })
}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shallot-approval-'))
})
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
    expect(snapshot.state['shallot.policy'].approvals).toMatchObject({ call_9: { answer: 'approve', turn: 1, tool: 'transfer' } })
    expect(snapshot.pendingTurn.turn).toBe(1)

    const resumed = await runWorker({ ...base, mode: 'resume' })
    expect(resumed, resumed.stderr).toMatchObject({ code: 0 })
    expect(resumed.lines).toEqual([expect.objectContaining({ status: 'completed', effects: 1 })])
    // The write's outcome is unknown (it may have happened): the model is told so, nothing runs twice.
    expect(resumed.lines[0]?.output).toContain('outcome_unknown')

    const again = await runWorker({ ...base, mode: 'resume', approvals: { call_9: 'approve' } })
    expect(again.lines).toEqual([expect.objectContaining({ status: 'completed', effects: 1 })])
  }, 120_000)

  it('two processes resume the same run at once: one proceeds, the other is refused with run_in_progress; the write runs once', async () => {
    const base = { db: join(dir, 'two.db'), checkpoints: join(dir, 'r2.json') }
    const first = await runWorker({ ...base, mode: 'run' })
    expect(first.lines).toEqual([{ status: 'stopped', kind: 'user_input_required', pending: ['call_9'], effects: 0 }])

    let second: Promise<Exit> | undefined
    // The first resume is held inside the approved write; the second starts then, and ends before the first is let go.
    const held = runWorker({ ...base, mode: 'resume', hold: true, approvals: { call_9: 'approve' } }, (line, stdin) => {
      if (line.event !== 'effect-started') return
      second = runWorker({ ...base, mode: 'resume', approvals: { call_9: 'approve' } })
      second.then(() => stdin.write('go\n'))
    })
    const proceeded = await held
    const refused = await (second as Promise<Exit>)
    expect(refused, refused.stderr).toMatchObject({ code: 0 })
    expect(refused.lines).toEqual([
      {
        status: 'refused',
        code: 'run_in_progress',
        message: expect.stringContaining('agent.resume(): run "r1" is being driven by another run() or resume() right now; nothing ran'),
        effects: 1,
      },
    ])
    expect(proceeded, proceeded.stderr).toMatchObject({ code: 0 })
    expect(proceeded.lines).toEqual([{ status: 'completed', output: 'the model read: sent 50000 to bob', effects: 1 }])
    // The claim was given back: a later resume sees the completed run and writes nothing.
    const after = await runWorker({ ...base, mode: 'resume' })
    expect(after.lines).toEqual([{ status: 'completed', output: 'the model read: sent 50000 to bob', effects: 1 }])
    expect(existsSync(`${base.checkpoints}.lock`)).toBe(false)
  }, 120_000)
})
