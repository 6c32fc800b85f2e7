// `shallot run --park-after` on a model pushed back: the provider's 429 names a Retry-After past the
// park threshold, so the run parks before its model call instead of holding the process, prints when it
// may go on and the resume line, and the resume asks the model again. In-process on the manual clock,
// then as a user runs it: the built command, and the printed resume line pasted into a shell.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { type FakeProvider, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../cli.js'
import { binPath, childEnv, shallot, tempDir } from './run.test-helper.js'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  vi.unstubAllEnvs()
})

/** The provider answers 429 with `retryAfterSeconds`, then the task. */
async function pushedBack(retryAfterSeconds: number): Promise<FakeProvider> {
  const fake = await fakeProvider({ script: [{ fault: 'rate_limit', retryAfterSeconds }, { text: 'Hello after the wait' }] })
  cleanups.push(() => fake.close())
  return fake
}

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
  while (advance !== undefined && !settled) {
    if (advance(out)) await clock.advance(1000)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return { code: await done, out, err }
}

describe('shallot run --park-after: a model pushed back past the threshold parks the run', { timeout: 30_000 }, () => {
  it('parks before the model call (exit 75) with the wake time, the resume line and the handoff; the resume asks the model again', async () => {
    const fake = await pushedBack(120)
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const db = join(dir.root, 'run.db')
    const record = join(dir.root, 'run.json')
    const common = ['--model', 'openai:test-model', '--checkpoints', db]
    const run = await mainOn(
      ['run', ...common, '--park-after', '10000', '--run-id', 'm-1', '--record', record, 'Say hello'],
      fake,
      manualClock(),
    )
    expect(run.err).toEqual([])
    expect(run.code).toBe(75)
    // One request: the model retry gives a Retry-After past --park-after back at once instead of sleeping it.
    expect(fake.requests).toHaveLength(1)
    const text = run.out.join('\n')
    expect(text).toMatch(/^wait {2}parked for 120 s: the model test-model answered rate_limited: it may be asked again after 120 s$/m)
    expect(text).toMatch(/^parked until \d{4}-\d\d-\d\dT[\d:.]+Z \(in 120 s\): the model test-model answered rate_limited/m)
    expect(text).toContain('the calls already done are kept, and the model is asked again')
    const resume = text.match(/^ {2}resume: (.*)$/m)?.[1]
    expect(resume).toBe(`npx shallot resume m-1 --checkpoints ${db} --model openai:test-model --park-after 10000`)
    const handoff = readFileSync(join(dir.root, 'm-1.handoff.md'), 'utf8')
    expect(handoff).toMatch(/^# Handoff: run m-1, parked until /)
    expect(handoff).toContain('the model call to test-model waits until')
    const recorded = JSON.parse(readFileSync(record, 'utf8'))
    expect(recorded).toMatchObject({ status: 'parked', parked: { reason: { code: 'rate_limited', model: 'test-model', waitMs: 120_000 } } })
    expect(await main(['report', record, '-o', join(dir.root, 'run.html')], { out: () => {}, err: (l) => expect.fail(l) })).toBe(0)
    expect(readFileSync(join(dir.root, 'run.html'), 'utf8')).toContain(
      'the model test-model answered rate_limited; the model is asked again',
    )

    // Too early without --park-after: nothing runs, and the line says when and why.
    const early = await mainOn(['resume', 'm-1', ...common], fake, manualClock())
    expect(early.code).toBe(75)
    expect(early.out.at(-1)).toMatch(
      /^run m-1 is parked until \S+ \(\d+ s from now\): the model test-model answered rate_limited; nothing ran\./,
    )
    expect(fake.requests).toHaveLength(1)

    // With a threshold above the rest, the resume waits it out (a wait line counting it), then asks the model.
    const clock = manualClock()
    const resumed = await mainOn(['resume', 'm-1', ...common, '--park-after', '200000'], fake, clock, (out) =>
      out.some((l) => l.startsWith('wait')),
    )
    expect(resumed.err).toEqual([])
    expect(resumed.code).toBe(0)
    expect(resumed.out.find((l) => l.startsWith('wait'))).toMatch(
      /^wait {2}\d+\.?\d* s until the parked run wakes: the model test-model answered rate_limited$/,
    )
    expect(clock.now()).toBeGreaterThanOrEqual(110_000)
    expect(resumed.out).toContain('completed: Hello after the wait')
    expect(fake.requests).toHaveLength(2)
  })
})

describe('shallot run --park-after on a model pushed back, as a user runs it', { timeout: 60_000 }, () => {
  it('the built command parks before the model call, and the resume line it printed, pasted after the wake time, completes', async () => {
    const fake = await pushedBack(2)
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const env = childEnv({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL })
    const db = join(dir.root, 'run.db')
    const parked = await shallot(
      ['run', '--model', 'openai:test-model', '--checkpoints', db, '--park-after', '1000', 'Say hello'],
      env,
      dir.root,
    ).exited
    expect(parked.err).toBe('')
    expect(parked.code).toBe(75)
    expect(parked.out).toMatch(/^parked until \S+ \(in 2 s\): the model test-model answered rate_limited/m)
    const wakeAt = Date.parse(parked.out.match(/^parked until (\S+) /m)?.[1] ?? '')
    const resume = parked.out.match(/^ {2}resume: (npx shallot resume .*)$/m)?.[1] ?? ''
    expect(resume).toContain('--park-after 1000')
    expect(fake.requests).toHaveLength(1)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wakeAt - Date.now() + 50)))
    const script = `npx() { shift; "${process.execPath}" "${binPath}" "$@"; }\n${resume}`
    const resumed = await promisify(execFile)('bash', ['-c', script], { env, cwd: dir.root }).catch((err) => err)
    expect(resumed.stderr).toBe('')
    expect(resumed.stdout).toContain('completed: Hello after the wait')
    expect(fake.requests).toHaveLength(2)
  })
})
