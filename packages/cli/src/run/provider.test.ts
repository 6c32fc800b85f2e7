import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type FakeHttpFaultKind, fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { mainHere, tempDir } from './run.test-helper.js'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
const shallotHere = (argv: readonly string[], env: Record<string, string>) => mainHere(argv, env, cleanups)

async function setup(fault: FakeHttpFaultKind) {
  const fake = await fakeProvider({ script: [{ fault }] })
  cleanups.push(() => fake.close())
  const dir = await tempDir()
  cleanups.push(dir.remove)
  return { fake, root: dir.root }
}

const lineOf = (out: string, start: string) =>
  out
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.startsWith(start)) ?? ''

describe("a provider's refusal is named, with what to fix and the command that resumes", { timeout: 60_000 }, () => {
  it.each([
    [
      'authentication',
      ' refused the credentials (401',
      'Check OPENAI_API_KEY: openai at URL refused it (the key, or its access to the model)',
    ],
    [
      'permission_denied',
      ' refused the credentials (403',
      'Check OPENAI_API_KEY: openai at URL refused it (the key, or its access to the model)',
    ],
    [
      'insufficient_quota',
      "'s quota or billing is exhausted (429",
      'Add credit or raise the quota of the openai account behind OPENAI_API_KEY',
    ],
  ] as const)('%s', async (fault, refused, advice) => {
    const { fake, root } = await setup(fault)
    const db = join(root, 'run.db')
    const report = join(root, 'report.md')
    const { code, out, err } = await shallotHere(
      ['run', '--model', 'openai:m', '--checkpoints', db, '--report', report, '--run-id', 'refused-1', 'hi'],
      { OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL },
    )
    expect(err).toBe('')
    expect(code).toBe(1)
    const why = lineOf(out, 'Why: ')
    expect(why).toContain(`Why: the model provider${refused}`)
    expect(why).not.toContain('a tool needs something')
    expect(why.split('the model').length).toBe(2)
    const next = lineOf(out, 'Next: ')
    const resume = `npx shallot resume refused-1 --checkpoints ${db} --model openai:m`
    expect(next).toBe(`Next: ${advice.replace('URL', fake.openaiBaseURL)}, then resume it with ${resume}.`)
    expect(out).not.toContain('agent.resume(')
    expect(out).not.toContain('Provide what the tool asks for')
    expect(readFileSync(report, 'utf8')).toContain(`    ${next}\n`)
  })

  it('without --checkpoints the Next line says how to make the run resumable, not agent.resume', async () => {
    const { fake } = await setup('authentication')
    const { code, out } = await shallotHere(['run', '--model', 'openai:m', 'hi'], {
      OPENAI_API_KEY: 'sk-fake-4242',
      OPENAI_BASE_URL: fake.openaiBaseURL,
    })
    expect(code).toBe(1)
    expect(lineOf(out, 'Next: ')).toMatch(/, then run it again with --checkpoints run\.db \(this run kept no checkpoint\)\.$/)
    expect(out).not.toContain('agent.resume(')
  })
})

describe('every stop gives the command line, not the library call', { timeout: 60_000 }, () => {
  it('a run out of turns: Next resumes with shallot resume', async () => {
    const fake = await fakeProvider({ script: [{ toolCalls: [{ name: 'nope', args: {} }] }], onEnd: 'repeat' })
    cleanups.push(() => fake.close())
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const db = join(dir.root, 'run.db')
    const { code, out } = await shallotHere(
      ['run', '--model', 'openai:m', '--checkpoints', db, '--max-turns', '1', '--run-id', 'turns-1', 'hi'],
      { OPENAI_API_KEY: 'x', OPENAI_BASE_URL: fake.openaiBaseURL },
    )
    expect(code).toBe(1)
    expect(out).toContain('stopped: budget_exhausted')
    expect(lineOf(out, 'Next: ')).toMatch(
      new RegExp(`raise limits.maxTurns .*then resume it with npx shallot resume turns-1 --checkpoints ${db} --model openai:m.$`),
    )
    expect(out).not.toContain('agent.resume(')
  })
})

describe('a base URL with credentials in it is refused before any model call', { timeout: 60_000 }, () => {
  it.each([
    ['OPENAI_BASE_URL', 'openai:m', 'user:hunter2@'],
    ['OPENAI_BASE_URL', 'openai:m', ':hunter2@'],
    ['OPENAI_BASE_URL', 'openai:m', 'user%40corp:hunter2%21@'],
    ['ANTHROPIC_BASE_URL', 'anthropic:m', 'user:hunter2@'],
  ])('%s with %s', async (variable, model, credentials) => {
    const { fake } = await setup('authentication')
    const base = variable === 'OPENAI_BASE_URL' ? fake.openaiBaseURL : fake.anthropicBaseURL
    const url = base.replace('http://', `http://${credentials}`)
    const { code, out, err } = await shallotHere(['run', '--model', model, 'hi'], {
      OPENAI_API_KEY: 'sk-fake-4242',
      ANTHROPIC_API_KEY: 'sk-ant-fake',
      [variable]: url,
    })
    expect(code).toBe(2)
    expect(out).toBe('')
    expect(err.split('\n')).toHaveLength(1)
    expect(err).toContain(`shallot: ${variable} holds credentials (user:password@); put the key in`)
    expect(err).not.toContain('hunter2')
    expect(fake.requests).toHaveLength(0)
  })
})

it('a base URL that is not http(s) is named without what comes before its @', async () => {
  const { code, err } = await shallotHere(['run', '--model', 'openai:m', 'hi'], {
    OPENAI_API_KEY: 'x',
    OPENAI_BASE_URL: 'ftp://user:hunter2@host/v1',
  })
  expect(code).toBe(2)
  expect(err).toBe('shallot: OPENAI_BASE_URL is not an http(s) URL: "ftp://…@host/v1"')
})
