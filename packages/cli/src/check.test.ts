import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from './cli.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-check-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function run(...argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

function write(name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

const SIM = ['--runs', '2', '--steps', '3']

describe('shallot check and shallot sim --config apply the same checks', () => {
  it('rejects options a middleware refuses only when it is built, as sim does', async () => {
    const file = write('cooldown.yaml', 'stack:\n  - circuit-breaker:\n      cooldownMs: 1000\n      maxCooldownMs: 10\n')
    const check = await run('check', file)
    expect(check.code).toBe(1)
    expect(check.err).toContain(`${file}:4: stack[0].circuit-breaker.maxCooldownMs`)
    await expect(run('sim', '--config', file, ...SIM)).rejects.toMatchObject({
      name: 'ConfigError',
      issues: [expect.objectContaining({ path: 'stack[0].circuit-breaker.maxCooldownMs', line: 4 })],
    })
  })

  it('checks the policy layer as shallot run reads it: good rules pass, a bad rule is named with its line', async () => {
    const good = write(
      'policy.yaml',
      'stack:\n  - policy:\n      rules:\n        - { action: deny, tools: transfer, reason: no transfers }\n  - timeout\n',
    )
    const ok = await run('check', good)
    expect(ok.err).toBe('')
    expect(ok.code).toBe(0)
    expect(ok.out).toContain('policy')
    const bad = write('policy-bad.yaml', 'stack:\n  - policy:\n      rules:\n        - { action: maybe, tools: transfer }\n')
    const refused = await run('check', bad)
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4: stack\\[0\\]\\.policy`))
  })

  it('says which names only the code can confirm instead of a bare ok; sim runs the stack and says which overrides it left out', async () => {
    const file = write('tools.yaml', 'stack: [retry]\ntools:\n  charge_card: { retry: none }\n  search: { effect: read }\n')
    const check = await run('check', file)
    expect(check.code).toBe(0)
    expect(check.out).toContain(`${file}: ok as far as the file goes (1 layer: retry)`)
    expect(check.out).toMatch(/not checked: that the tools named under tools: exist \(charge_card, search\): tools are defined in code/)
    expect(check.out).not.toMatch(/: ok \(/)
    const sim = await run('sim', '--config', file, ...SIM)
    expect(sim.code).toBe(0)
    expect(sim.out).toContain('tools.yaml')
    expect(sim.err.split('\n')[0]).toBe(
      'shallot sim: tools.yaml: not simulated: the overrides under tools: for charge_card, search (a simulated run calls one tool, step; tools.step is simulated)',
    )
  })

  it("simulates the sample of docs/config.md as it is, its tools' overrides and all", async () => {
    const docs = readFileSync(new URL('../../../docs/config.md', import.meta.url), 'utf8')
    const sample = /```yaml\n(# shallot\.yaml\n# yaml-language-server[\s\S]*?)```/.exec(docs)?.[1]
    expect(sample).toContain('charge_card:')
    const file = write('shallot.yaml', sample as string)
    expect((await run('check', file)).code).toBe(0)
    const sim = await run('sim', '--config', file, ...SIM)
    expect(sim.code).toBe(0)
    expect(sim.out).toMatch(/end-to-end success rate/)
  })

  it('simulates an override of its own tool, step: tools.step: { retry: none } is the same as no retry', async () => {
    const plain = write('step.yaml', 'stack: [panic-catcher, retry, error-classifier, timeout]\ntools:\n  step: { retry: none }\n')
    const sim = await run('sim', '--config', plain, '--runs', '200', '--steps', '10', '--fault-rate', '0.2', '--faults', '5xx')
    expect(sim.err).not.toContain('not simulated')
    const row = sim.out.split('\n').find((l) => /^\s+10\s/.test(l)) ?? ''
    const [, , noRetry, stepped] = row.trim().split(/\s+/)
    expect(stepped).toBe(noRetry)
  })

  it('says a plain ok when the file names nothing the code must confirm, and sim runs it', async () => {
    const file = write('plain.yaml', 'stack:\n  - panic-catcher\n  - retry: { maxAttempts: 2 }\n')
    expect(await run('check', file)).toMatchObject({ code: 0, out: `${file}: ok (2 layers: panic-catcher, retry)` })
    expect((await run('sim', '--config', file, ...SIM)).code).toBe(0)
  })

  it('lists every problem of the file at once, and counts them', async () => {
    const file = write('many.yaml', 'stack:\n  - retry: { baseMs: fast }\n  - timeoutt\ntools:\n  charge_card:\n    effect: writ\n')
    const { code, err } = await run('check', file)
    expect(code).toBe(1)
    expect(err.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${file}:2: stack\\[0\\]\\.retry\\.baseMs: `)),
      expect.stringMatching(new RegExp(`^${file}:3: stack\\[1\\]: unknown middleware "timeoutt"`)),
      expect.stringMatching(new RegExp(`^${file}:6: tools\\.charge_card\\.effect: `)),
      `${file}: 3 problems`,
    ])
  })

  it('refuses a hostile file with a ConfigError, not a crash', async () => {
    const file = write('deep.json', `{"stack": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`)
    const { code, err } = await run('check', file)
    expect(code).toBe(1)
    expect(err).toContain('nested more than 64 levels deep')
  })
})
