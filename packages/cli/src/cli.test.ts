import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStack } from '@shallot/core'
import { errorClassifier, panicCatcher } from 'shallot'
import { describe, expect, it } from 'vitest'
import { main } from './cli.js'
import { herd } from './sim/herd.js'
import { simulate } from './sim/simulate.js'

async function run(...argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

describe('shallot demo', () => {
  it('tells the whole story on virtual time, with plain text when piped, and exits 0', async () => {
    const { code, out } = await run('demo')
    expect(code).toBe(0)
    expect(out.includes('\u001b[')).toBe(false)
    // The mistyped path, healed by a soft error.
    expect(out).toContain('"error":"not_found","message":"file src/mian.rs not found"')
    expect(out).toMatch(/→ read_file \{"path":"src\/main.rs"\}\n\s+✓ fn main/)
    // The flaky read, retried with jitter.
    expect(out.match(/↻ retry: attempt \d failed \(upstream_error\)/g)).toHaveLength(2)
    // The refund that lands and then times out: not repeated, reconciled by the provider's lookup, done once.
    expect(out).toMatch(
      /→ charge_card .*\n.*⏱ timeout: attempt 1 gave up.*\n.*⊘ retry: not repeating a write after timeout.*\n.*⌕ idempotency: asked charge_card's reconcile \(1\): applied.*\n.*✓ idempotency: the write had landed.*\n\s+✓ \{"amountCents":-4200,"id":"re_1","order":"ORD-2026-00042"\}/,
    )
    expect(out).not.toContain('outcome_unknown')
    expect(out).toMatch(/card charges applied\s+1\n/)
    expect(out).toMatch(/unknown writes reconciled\s+1\n/)
    expect(out).toContain('\n    turn 4: charge_card ok\n')
    expect(out).toContain('“The refund went through. Is the payment provider healthy?”')
    // The circuit that opens, and the model that routes around it.
    expect(out).toContain('⚡ circuit status_page: closed → open')
    expect(out).toMatch(/the request marks status_page: UNAVAILABLE/)
    expect(out).toContain('→ status_cache')
    // The loop that is refused and then stopped, with the report.
    expect(out.match(/⛔ stuck-loop: refused before running/g)).toHaveLength(2)
    expect(out).toContain('stopped: loop_detected')
    expect(out).toContain('Why: the model kept repeating a call that failed the same way')
    expect(out).toMatch(/breaker trips\s+1/)
    // What to do next, as a command-line user does it: the library's agent.resume() is no command.
    expect(out).not.toContain('agent.resume(')
    expect(out).toContain("then resume it with shallot resume <runId> --checkpoints run.db --note '<what you changed>'")
  })
})

describe('usage errors', () => {
  it.each([
    [['launch'], 'unknown command "launch"'],
    [['chekc', 'shallot.yaml'], `unknown command "chekc"; did you mean 'check'?`],
    [['smi'], `unknown command "smi"; did you mean 'sim'?`],
    [['--verbose'], 'unknown command "--verbose"'],
    [['sim', '--rusn', '5'], `Unknown option '--rusn'; did you mean '--runs'?`],
    [['demo', '--realtime'], `Unknown option '--realtime'; did you mean '--real-time'?`],
    [['demo', '--fast'], "Unknown option '--fast'"],
    [['sim', '--runs', 'many'], '--runs must be a whole number 1–1000000, got "many"'],
    [['sim', '--faults', 'fire'], '--faults: unknown fault "fire"'],
    [['sim', '--effect', 'delete'], '--effect must be read, idempotent or write'],
    [['check'], 'check takes one config file'],
    [['check', '/nonexistent/shallot.yaml'], 'no such file: /nonexistent/shallot.yaml'],
    [['sim', '--compare', 'a.yaml'], '--compare takes two config files'],
  ])('%j exits 2 with one line and the usage', async (argv, message) => {
    const { code, err } = await run(...argv)
    expect(code).toBe(2)
    expect(err.split('\n')[0]).toContain(message)
    expect(err).toContain('usage: shallot <command>')
  })
})

describe('help', () => {
  it.each(['run', 'resume', 'demo', 'report', 'sim', 'check'])(
    '%s --help and -h print its usage, options and exit codes, and exit 0 without running anything',
    async (command) => {
      for (const argv of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
        [command, 'x.yaml', '--help'],
      ]) {
        const { code, out, err } = await run(...argv)
        expect(err).toBe('')
        expect(code).toBe(0)
        expect(out.startsWith(`usage: shallot ${command}`)).toBe(true)
        expect(out).toMatch(/\nexit codes:\n {2}0 {3}\S/)
        expect(out).toMatch(/\n {2}2 {3}bad usage/)
      }
    },
  )

  it('names every exit code a command can end with, and the options it takes', async () => {
    const runHelp = (await run('run', '--help')).out
    for (const code of ['0', '1', '2', '75']) expect(runHelp).toMatch(new RegExp(`\\n  ${code} +\\S`))
    expect(runHelp).toContain('--checkpoints FILE.db')
    expect((await run('resume', '-h')).out).toContain('--note "TEXT"')
    expect((await run('check', '-h')).out).toMatch(/\n {2}1 {3}the config has problems/)
    expect((await run('sim', '-h')).out).toContain('--fault-rate 0.01')
    const all = await run('--help')
    expect(all.code).toBe(0)
    expect(all.out).toMatch(/\nexit codes:\n {2}0 {3}done/)
    expect(all.out).toContain('<command> --help')
  })

  it('refuses help for a command that does not exist, with the nearest one', async () => {
    const { code, err } = await run('help', 'chekc')
    expect(code).toBe(2)
    expect(err.split('\n')[0]).toBe(`shallot: no help for "chekc"; did you mean 'check'?: shallot help <command>`)
  })
})

describe('shallot --version', () => {
  it('prints the version of the installed package, and exits 0', async () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+/)
    for (const flag of ['--version', '-v']) expect(await run(flag)).toEqual({ code: 0, out: manifest.version, err: '' })
  })

  it('suggests nothing for a command that is nowhere near a known one', async () => {
    const { err } = await run('deploy')
    expect(err.split('\n')[0]).toBe('shallot: unknown command "deploy"')
  })
})

describe('shallot sim', () => {
  it('prints progress lines on stderr when stderr is not a terminal, and keeps stdout for the tables', async () => {
    const err: string[] = []
    const out: string[] = []
    const code = await main(['sim', '--runs', '40', '--steps', '5,10', '--seed', '2'], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      errIsTerminal: false,
    })
    expect(code).toBe(0)
    expect(err.filter((l) => l.endsWith(': 40 runs'))).toEqual([
      'shallot sim: [1/4] no retry, 5 steps: 40 runs',
      'shallot sim: [2/4] no retry, 10 steps: 40 runs',
      'shallot sim: [3/4] default stack, 5 steps: 40 runs',
      'shallot sim: [4/4] default stack, 10 steps: 40 runs',
    ])
    expect(err.filter((l) => l.startsWith('shallot sim: [4/4]'))).toEqual([
      'shallot sim: [4/4] default stack, 10 steps: 40 runs',
      'shallot sim: [4/4] default stack, 10 steps: 10/40 runs (25%)',
      'shallot sim: [4/4] default stack, 10 steps: 20/40 runs (50%)',
      'shallot sim: [4/4] default stack, 10 steps: 30/40 runs (75%)',
      'shallot sim: [4/4] default stack, 10 steps: 40/40 runs (100%)',
    ])
    expect(err.join('\n')).not.toMatch(new RegExp(`[\r${String.fromCharCode(27)}]`))
    expect(out.join('\n')).not.toContain('shallot sim: [')
  })

  it('prints a progress line for a single run too', async () => {
    const err: string[] = []
    await main(['sim', '--runs', '1', '--steps', '3'], { out: () => {}, err: (l) => err.push(l) })
    expect(err).toEqual([
      'shallot sim: [1/2] no retry, 3 steps: 1 runs',
      'shallot sim: [1/2] no retry, 3 steps: 1/1 runs (100%)',
      'shallot sim: [2/2] default stack, 3 steps: 1 runs',
      'shallot sim: [2/2] default stack, 3 steps: 1/1 runs (100%)',
    ])
  })

  it('reproduces (1-p)^n without retry within a percentage point over 10,000 runs', { timeout: 120_000 }, async () => {
    const noRetry = (env: Parameters<Parameters<typeof simulate>[0]['stack']>[0]) =>
      createStack({ ...env, middleware: [panicCatcher(), errorClassifier()] })
    for (const steps of [10, 100]) {
      const result = await simulate({
        steps,
        runs: 10_000,
        faultRate: 0.01,
        faults: ['server_error', 'connection_reset'],
        latencyMs: 0,
        effect: 'read',
        seed: 7,
        stack: noRetry,
      })
      expect(Math.abs(result.successRate - 0.99 ** steps)).toBeLessThan(0.01)
      expect(result.attemptsPerStep).toBe(1)
    }
  })

  it('prints the table for both stacks and writes a chart', async () => {
    const plot = join(mkdtempSync(join(tmpdir(), 'shallot-sim-')), 'chart.svg')
    const { code, out } = await run('sim', '--runs', '300', '--steps', '10,50', '--seed', '3', '--plot', plot)
    expect(code).toBe(0)
    expect(out).toMatch(/steps\s+\(1-p\)\^n\s+no retry\s+default stack/)
    expect(out).toMatch(/\n\s+10\s+90\.4%\s+\d+\.\d%\s+(9\d|100)\.\d%/)
    const svg = readFileSync(plot, 'utf8')
    expect(svg).toContain('<svg')
    expect(svg).toContain('default stack')
  })

  it('lists every tool effect in --help and retries an idempotent tool’s timeouts that a write tool refuses', async () => {
    const help = await run('--help')
    expect(help.out + help.err).toMatch(/--effect read\|write\|idempotent +the simulated tool's effect/)
    const argv = ['sim', '--runs', '60', '--steps', '10', '--faults', 'timeout', '--fault-rate', '0.2', '--seed', '4']
    const defaultRow = (out: string) => out.split('\ndefault stack\n')[1]?.split('\n')[1]?.trim().split(/\s+/) ?? []
    const idempotent = await run(...argv, '--effect', 'idempotent')
    expect(idempotent.code).toBe(0)
    expect(idempotent.out).toContain('idempotent tool')
    const [, , , , , idemRetries, , idemRefused] = defaultRow(idempotent.out)
    expect([Number(idemRetries) > 0, Number(idemRefused)]).toEqual([true, 0])
    const [, , , , , writeRetries, , writeRefused] = defaultRow((await run(...argv, '--effect', 'write')).out)
    expect([Number(writeRetries), Number(writeRefused) > 0]).toEqual([0, true])
  })

  it('turns a write tool’s timeouts into refused retries, never repeated', async () => {
    const { out } = await run('sim', '--runs', '200', '--steps', '20', '--faults', 'timeout', '--fault-rate', '0.2', '--effect', 'write')
    const defaultRow = out.split('\ndefault stack\n')[1]?.split('\n')[1] ?? ''
    const refused = Number(defaultRow.trim().split(/\s+/).at(-1))
    expect(refused).toBeGreaterThan(0)
    // The same stack with a write tool that can be looked up: every unknown outcome reconciled, none left.
    const row = out.match(/\n {2}reconciled +20 +\d+ +(\d+) +(\d+) +(\d+) +(\d+)/)
    const [unknown = 0, landed = 0, notLanded = 0, left] = (row?.slice(1) ?? []).map(Number)
    expect(unknown).toBeGreaterThan(0)
    expect([landed + notLanded, left]).toEqual([unknown, 0])
  })
})

describe('shallot sim herd', () => {
  it('shows jitter finishing the herd in fewer calls than plain exponential backoff', async () => {
    const options = { clients: 50, baseMs: 10, capMs: 10_000, slotMs: 10, seed: 1 }
    const exponential = await herd('exponential', options)
    const full = await herd('full-jitter', options)
    expect(full.calls).toBeLessThan(exponential.calls)
    const { code, out } = await run('sim', 'herd', '--clients', '20')
    expect(code).toBe(0)
    expect(out).toMatch(/full-jitter\s+\d+/)
  })
})

describe('shallot check', () => {
  it('accepts a valid file and rejects a broken one with its line, exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shallot-check-'))
    const good = join(dir, 'good.yaml')
    writeFileSync(good, 'stack:\n  - panic-catcher\n  - retry\n')
    expect((await run('check', good)).code).toBe(0)
    const bad = join(dir, 'bad.yaml')
    writeFileSync(bad, 'stack:\n  - panic-catcher\n  - retyr\n')
    const result = await run('check', bad)
    expect(result.code).toBe(1)
    expect(result.err).toContain('bad.yaml:3')
    expect(result.err).toMatch(/retry/)
  })
})
