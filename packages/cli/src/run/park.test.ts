import { execFile } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type FakeProvider, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../cli.js'
import { binPath, childEnv, shallot, tempDir } from './run.test-helper.js'

const busyServer = fileURLToPath(new URL('../../fixtures/busy-mcp-server.mjs', import.meta.url))
const busyMcp = `"${process.execPath}" "${busyServer}"`

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  vi.unstubAllEnvs()
})

/** A breaker that opens on the first failure and stays open `cooldownMs`: its refusal is the long wait that parks. */
function breakerConfig(root: string, cooldownMs: number): string {
  const file = join(root, 'shallot.yaml')
  writeFileSync(
    file,
    `stack:\n  - circuit-breaker: { policy: { consecutive: { threshold: 1 } }, cooldownMs: ${cooldownMs} }\n  - retry: { maxAttempts: 1 }\n`,
  )
  return file
}

/** The model asks for the busy read twice (rate limited, then refused by the open circuit), then answers from its result. */
async function busyModel(flag: string): Promise<FakeProvider> {
  const fake = await fakeProvider({
    script: [
      { toolCalls: [{ name: 'busy_read', args: { path: flag } }] },
      { toolCalls: [{ name: 'busy_read', args: { path: flag } }] },
      (request) => ({ text: `Done: ${request.toolResults.at(-1)?.content}` }),
    ],
  })
  cleanups.push(() => fake.close())
  return fake
}

async function setup(cooldownMs: number) {
  const dir = await tempDir()
  cleanups.push(dir.remove)
  const flag = join(dir.root, 'back.txt')
  const fake = await busyModel(flag)
  const config = breakerConfig(dir.root, cooldownMs)
  return { root: dir.root, flag, fake, config, db: join(dir.root, 'run.db') }
}

/** `main()` here, on `clock`, as the `shallot` binary runs it (nothing on a terminal). */
async function mainOn(argv: string[], fake: FakeProvider, clock: ManualClock, advance?: (out: readonly string[]) => boolean) {
  for (const [name, value] of Object.entries({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL, NO_COLOR: '1' }))
    vi.stubEnv(name, value)
  const out: string[] = []
  const err: string[] = []
  const done = main(argv, { out: (line) => out.push(line), err: (line) => err.push(line), clock })
  let settled = false
  done.then(
    () => (settled = true),
    () => (settled = true),
  )
  // Moves virtual time (the rest a resume waits out) once `advance` says so, until the command ends.
  while (advance !== undefined && !settled) {
    if (advance(out)) await clock.advance(1000)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return { code: await done, out, err }
}

describe('shallot run --park-after: a long wait parks the run in its checkpoint', { timeout: 30_000 }, () => {
  it('parks on an open circuit (exit 75), prints when and the command, writes the handoff; resume waits out a short rest and completes', async () => {
    const { root, flag, fake, config, db } = await setup(60_000)
    const report = join(root, 'report.md')
    const record = join(root, 'run.json')
    const common = ['--model', 'openai:test-model', '--config', config, '--mcp', busyMcp, '--checkpoints', db]
    const run = await mainOn(
      ['run', ...common, '--park-after', '10000', '--run-id', 'busy-1', '--report', report, '--record', record, 'Read it when it is back'],
      fake,
      manualClock(),
    )
    expect(run.err).toEqual([])
    expect(run.code).toBe(75)
    expect(fake.requests).toHaveLength(2)
    const text = run.out.join('\n')
    expect(text).toMatch(/^wait {2}parked for 60 s: busy_read \(call \S+\) answered circuit_open: it may be called again after 60 s$/m)
    expect(text).toMatch(/^parked until \d{4}-\d\d-\d\dT[\d:.]+Z \(in 60 s\): busy_read/m)
    const resume = text.match(/^ {2}resume: (.*)$/m)?.[1]
    expect(resume).toBe(
      `npx shallot resume busy-1 --checkpoints ${db} --model openai:test-model --config ${config} --mcp '${busyMcp}' --park-after 10000`,
    )
    const handoff = join(root, 'busy-1.handoff.md')
    expect(text).toContain(`handoff for a person: ${handoff}`)
    const written = readFileSync(handoff, 'utf8')
    expect(written).toMatch(/^# Handoff: run busy-1, parked until /)
    expect(written).toContain(`    ${resume}`)
    expect(readFileSync(report, 'utf8')).toMatch(
      /^# Run busy-1: parked until [\s\S]*busy_read \(call \S+\) answered circuit_open[\s\S]*Resume it at or after/,
    )
    // The run record says parked, and `shallot report` renders it.
    // (A config's stack keeps the system clock: the breaker's cooldown has run a few ms by the refusal.)
    const recorded = JSON.parse(readFileSync(record, 'utf8'))
    expect(recorded).toMatchObject({ status: 'parked', parked: { reason: { tool: 'busy_read', code: 'circuit_open' } } })
    expect(recorded.parked.reason.waitMs).toBeGreaterThan(55_000)
    const html = join(root, 'run.html')
    expect(await main(['report', record, '-o', html], { out: () => {}, err: (l) => expect.fail(l) })).toBe(0)
    expect(readFileSync(html, 'utf8')).toContain('<h2>Parked until ')

    // Too early, without --park-after: nothing runs, and the line says when.
    const early = await mainOn(['resume', 'busy-1', ...common], fake, manualClock())
    expect(early.code).toBe(75)
    expect(early.out.at(-1)).toMatch(/^run busy-1 is parked until \S+ \(\d+ s from now\): busy_read answered circuit_open; nothing ran\./)
    expect(fake.requests).toHaveLength(2)

    // Too early with --park-after below the rest: the same parked lines, exit 75, nothing asked of the model.
    const still = await mainOn(['resume', 'busy-1', ...common, '--park-after', '10000'], fake, manualClock())
    expect(still.code).toBe(75)
    expect(still.out.join('\n')).toMatch(/^parked until \S+ \(in \d+ s\): busy_read/m)
    expect(still.out.join('\n')).toContain(`  resume: ${resume}`)
    expect(fake.requests).toHaveLength(2)

    // With a park threshold above the rest, resume waits it out (a wait line counting it) and the waiting call runs again.
    writeFileSync(flag, 'ok')
    const clock = manualClock()
    const resumed = await mainOn(['resume', 'busy-1', ...common, '--park-after', '120000'], fake, clock, (out) =>
      out.some((l) => l.startsWith('wait')),
    )
    expect(resumed.err).toEqual([])
    expect(resumed.code).toBe(0)
    expect(resumed.out.find((l) => l.startsWith('wait'))).toMatch(
      /^wait {2}\d+\.?\d* s until the parked run wakes: busy_read answered circuit_open$/,
    )
    expect(clock.now()).toBeGreaterThanOrEqual(50_000)
    expect(resumed.out).toContain(`completed: Done: ${flag} is back`)
    expect(resumed.out).toContain(`removed ${handoff}: the stop it described is behind this run`)
    expect(existsSync(handoff)).toBe(false)
    expect(fake.requests).toHaveLength(3)
  })

  it.each([
    [['--park-after', '10000'], /--park-after needs --checkpoints FILE\.db/],
    [['--checkpoints', 'x.db', '--park-after', 'soon'], /--park-after takes milliseconds from 1 to 86400000 .*not "soon"/],
    [['--checkpoints', 'x.db', '--park-after', '0'], /--park-after takes milliseconds/],
    [['--checkpoints', 'x.db', '--park-after', '86400001'], /--park-after takes milliseconds/],
    [['--checkpoints', 'x.db', '--park-after', '-5'], /--park-after/],
  ])('refuses %j with one line naming the flag, exit 2, before any model call', async (flags, message) => {
    const fake = await fakeProvider()
    cleanups.push(() => fake.close())
    const result = await mainOn(['run', '--model', 'openai:test-model', ...flags, 'hi'], fake, manualClock())
    expect(result.code).toBe(2)
    expect(result.err[0]).toMatch(message)
    expect(fake.requests).toHaveLength(0)
  })
})

describe('shallot run --park-after, as a user runs it', { timeout: 60_000 }, () => {
  it('the built command parks, and the resume command it printed, pasted into a shell after the wake time, completes the run', async () => {
    const { root, flag, fake, config, db } = await setup(1500)
    const env = childEnv({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL })
    const args = ['run', '--model', 'openai:test-model', '--config', config, '--mcp', busyMcp, '--checkpoints', db, '--park-after', '1000']
    const parked = await shallot([...args, 'Read it when it is back'], env, root).exited
    expect(parked.err).toBe('')
    expect(parked.code).toBe(75)
    const wakeAt = Date.parse(parked.out.match(/^parked until (\S+) /m)?.[1] ?? '')
    const resume = parked.out.match(/^ {2}resume: (npx shallot resume .*)$/m)?.[1] ?? ''
    expect(resume).toContain('--park-after 1000')
    writeFileSync(flag, 'ok')
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wakeAt - Date.now() + 50)))
    // As pasted: the shell reads the quotes; `npx shallot` is the built bin (npx itself is tested by the walk-through).
    const script = `npx() { shift; "${process.execPath}" "${binPath}" "$@"; }\n${resume}`
    const resumed = await promisify(execFile)('bash', ['-c', script], { env, cwd: root }).catch((err) => err)
    expect(resumed.stderr).toBe('')
    expect(resumed.stdout).toContain(`completed: Done: ${flag} is back`)
    expect(fake.requests).toHaveLength(3)
  })
})
