// The quick soak as CI runs it: `pnpm chaos --quick` (240 runs over 18 s on 3 worker processes,
// every fault kind at least once, each misbehaviour planted in a run of its own) on the built packages
// (vitest's global setup builds them and bench/chaos before any test file starts: .ci/vitest-build.ts),
// judged by the checker. Real processes and servers share no fake clock, so this one test takes real
// time (about 45 s); it waits on the soak's exit, never a sleep.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { FAULT_KINDS, PLANTS } from './schedule.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'shallot-chaos-'))
const children: ChildProcess[] = []
afterAll(() => {
  // A soak still running (the test timed out) is stopped: it would run on, its servers and workers with it.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
  rmSync(dir, { recursive: true, force: true })
})

function soak(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const hook = join(root, 'bench/chaos/dist/bench/chaos/resolve-hook.js')
  const child = spawn(process.execPath, ['--import', hook, join(root, 'bench/chaos/dist/bench/chaos/run.js'), ...args], { cwd: dir })
  children.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    // CHAOS_SHOW=1 prints the soak's log as it runs.
    if (process.env.CHAOS_SHOW) process.stderr.write(chunk)
  })
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })))
}

describe('pnpm chaos --quick', () => {
  it('finishes every run once under every kind of fault, and names every planted anomaly by its kind', async () => {
    const json = join(dir, 'report.json')
    const { code, stdout, stderr } = await soak(['--quick', '--seed=1', `--json=${json}`])
    expect(code, `${stdout}\n${stderr}`).toBe(0)
    const report = JSON.parse(readFileSync(json, 'utf8'))
    expect(report).toMatchObject({
      seed: 1,
      runs: 240,
      duplicates: { byKey: 0, byWrite: 0 },
      overlappingDrivers: 0,
      lost: 0,
      anomalies: [],
    })
    for (const kind of FAULT_KINDS) expect(report.faults[kind], kind).toBeGreaterThan(0)
    expect(report.planted.map((p: { plant: string; caught: boolean }) => [p.plant, p.caught])).toEqual(PLANTS.map((p) => [p, true]))
    expect(Object.values(report.finals as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(240)
    expect(report.unknownOutcomes.landed + report.unknownOutcomes.notLanded).toBe(report.unknownOutcomes.total)
    expect(stdout).toContain('checker: no anomaly outside the planted runs, every planted one caught')
  }, 150_000)
})
