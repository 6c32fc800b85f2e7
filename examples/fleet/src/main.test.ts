// Runs the example as its README does (real processes, a real redis-server), on 3 workers, and
// checks the figures it prints. main.ts and its workers run from dist, which the test run's global setup
// (.ci/vitest-build.ts) builds before any test file starts.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const exampleDir = fileURLToPath(new URL('..', import.meta.url))

/** The value printed after `label` on its line. */
function figure(output: string, label: string): string {
  const line = output.split('\n').find((l) => l.trimStart().startsWith(label))
  if (line === undefined) throw new Error(`no figure "${label}" in:\n${output}`)
  return line.trimStart().slice(label.length).trim()
}

describe('examples/fleet', () => {
  it('shows one charge, one probe, no duplicate after a crash, and a fleet that survives a Redis restart', () => {
    const output = execFileSync(process.execPath, ['dist/main.js', '3', '20'], { cwd: exampleDir, encoding: 'utf8', timeout: 90_000 })
    expect(figure(output, 'side effects (cards charged)')).toBe('1')
    expect(figure(output, 'answered by replay')).toBe('49')
    expect(figure(output, 'worker 2: upstream calls while open')).toBe('0')
    expect(figure(output, 'probes run (upstream calls)')).toBe('1')
    expect(figure(output, 'refused circuit_open while the probe ran')).toBe('99')
    expect(figure(output, 'SIGKILL mid-charge: next identical call')).toBe('outcome_unknown')
    expect(figure(output, 'SIGKILL mid-charge: cards charged')).toBe('1')
    expect(figure(output, 'SIGSTOP: on SIGCONT the stopped worker')).toBe('token lost: result not recorded')
    expect(figure(output, 'SIGSTOP: cards charged')).toBe('1')
    expect(figure(output, 'write while down')).toMatch(/^store_unavailable in /)
    expect(figure(output, 'cards charged while down')).toBe('0')
    expect(figure(output, 'workers alive')).toBe('3 of 3')
    expect(figure(output, 'call stored before the outage, repeated after')).toBe('replayed (record kept)')
  }, 120_000)
})
