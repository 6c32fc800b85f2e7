import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sqliteCheckpoints } from '@shallot/store-sqlite'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { filesystemMcp, mainHere, tempDir } from './run.test-helper.js'

// What a terminal obeys instead of showing: C0 controls but newline, DEL, C1 (U+009B is an 8-bit CSI), bidi overrides.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const OBEYED = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/
/** Sets the window title, clears the screen, moves the cursor home: what hides the line above it. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u001b[H\u009b2J\u202e'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
const shallotHere = (argv: readonly string[], env: Record<string, string>, answers?: string[]) => mainHere(argv, env, cleanups, answers)

async function setup(script: Parameters<FakeProvider['script']> = []) {
  const fake = await fakeProvider({})
  cleanups.push(() => fake.close())
  if (script.length > 0) fake.script(...script)
  const dir = await tempDir()
  cleanups.push(dir.remove)
  return { fake, root: dir.root }
}

const envOf = (fake: FakeProvider) => ({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL })

describe('shallot run prints what a terminal shows, never what it obeys', { timeout: 60_000 }, () => {
  it('escapes in the task, the model text, a tool output and the answer are shown as text', async () => {
    const { fake, root } = await setup()
    const planted = join(root, 'planted.txt')
    writeFileSync(planted, `harmless${HOSTILE}`)
    fake.script({ text: `Reading${HOSTILE}`, toolCalls: [{ name: 'read_text_file', args: { path: planted } }] }, { text: `Done${HOSTILE}` })
    const report = join(root, 'report.md')
    const { code, out, err } = await shallotHere(
      ['run', '--model', 'openai:m', '--mcp', filesystemMcp(root), '--report', report, `Read it${HOSTILE}`],
      envOf(fake),
    )
    expect(err).toBe('')
    expect(code).toBe(0)
    expect(out).not.toMatch(OBEYED)
    expect(out).toContain('task  Read it\\x1b]0;pwned\\x07\\x1b[2J')
    expect(out).toContain('Reading\\x1b]0;pwned')
    expect(out).toContain('harmless\\x1b]0;pwned')
    expect(out).toContain('completed: Done\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x9b2J\\u202e')
    expect(readFileSync(report, 'utf8')).not.toMatch(OBEYED)
  })

  it('the report of a stopped run shows its task and failure as text', async () => {
    const { fake } = await setup([{ fault: 'invalid_request', message: `no such field${HOSTILE}` }])
    const { code, out } = await shallotHere(['run', '--model', 'openai:m', `Task${HOSTILE}\nforged line`], envOf(fake))
    expect(code).toBe(1)
    expect(out).toContain('stopped: model_failed')
    expect(out).toContain('Task: Task\\x1b]0;pwned')
    expect(out).not.toMatch(OBEYED)
  })

  it("the approval prompt shows the call id, the tool's arguments and the policy's reason as text", async () => {
    const { fake, root } = await setup()
    const target = join(root, 'note.txt')
    const config = join(root, 'shallot.yaml')
    writeFileSync(
      config,
      `stack:\n  - policy:\n      rules:\n        - { action: approve, tools: write_file, reason: "needs a person\\e]0;t\\a" }\n`,
    )
    fake.script(
      { toolCalls: [{ id: `call_w${HOSTILE}`, name: 'write_file', args: { path: target, content: `x${HOSTILE}` } }] },
      { text: 'ok' },
    )
    const { code, out } = await shallotHere(
      ['run', '--model', 'openai:m', '--config', config, '--mcp', filesystemMcp(root), 'Write the note'],
      envOf(fake),
      ['n'],
    )
    expect(code).toBe(0)
    const prompt = out.split('\n').find((line) => line.startsWith('approval needed: ')) ?? ''
    expect(prompt).toContain('approval needed: call_w\\x1b]0;pwned')
    expect(prompt).toContain('(needs a person\\x1b]0;t\\x07)')
    expect(out).not.toMatch(OBEYED)
  })
})

describe('errors that promise one line keep it', { timeout: 60_000 }, () => {
  const oneLine = (err: string) => {
    expect(err.split('\n')).toHaveLength(1)
    expect(err).not.toMatch(OBEYED)
  }

  it('a crafted run id, model id or flag is quoted in its one usage line', async () => {
    for (const argv of [
      ['resume', `run-1${HOSTILE}\nshallot: forged`, '--checkpoints', 'run.db', '--model', 'openai:m'],
      ['run', '--model', `openai${HOSTILE}\nforged:m`, 'hi'],
      ['run', '--model', 'openai:m', '--run-id', `r${HOSTILE}\nforged`, 'hi'],
      ['run', `--x${HOSTILE}\nforged`, 'hi'],
      [`ru${HOSTILE}\nforged`],
    ]) {
      const { code, err } = await shallotHere(argv, { OPENAI_API_KEY: 'x' })
      expect(code).toBe(2)
      oneLine(err.split('\nusage:')[0] as string)
      expect(err).toContain('\\x1b]0;pwned')
    }
  })

  it('a config error is one quoted line per problem', async () => {
    const { root } = await setup()
    const config = join(root, 'shallot.json')
    writeFileSync(config, JSON.stringify({ stack: ['retry'], [`key${HOSTILE}\nforged`]: 1 }))
    const { code, err } = await shallotHere(['run', '--model', 'openai:m', '--config', config, 'hi'], { OPENAI_API_KEY: 'x' })
    expect(code).toBe(2)
    oneLine(err)
  })

  it('shallot report on a record holding escapes and newlines in its keys and values is one line', async () => {
    const { root } = await setup()
    const record = join(root, 'run.json')
    const base = {
      format: 'shallot.run-record',
      version: 1,
      runId: 'r',
      task: 't',
      status: 'completed',
      durationMs: 0,
      steps: 0,
      events: [],
    }
    const bad = `k${HOSTILE}\nforged`
    for (const text of [
      JSON.stringify({ ...base, turns: [{ turn: 1, notes: { [bad]: {} }, inFlight: false, calls: [] }] }),
      JSON.stringify({ ...base, turns: [], [bad]: 1 }),
      `{"version": 1 ${HOSTILE}\nforged`,
    ]) {
      writeFileSync(record, text)
      const { code, err } = await shallotHere(['report', record, '-o', join(root, 'run.html')], {})
      expect(code).toBe(2)
      oneLine(err.split('\nusage:')[0] as string)
    }
  })

  it('resume of a checkpoint that cannot be read back quotes what it held', async () => {
    const { root } = await setup()
    const db = join(root, 'run.db')
    const bad = `k${HOSTILE}\nforged`
    const snapshot = { version: 1, runId: 'broken', input: 'x', status: 'stopped', turn: 1, stepsUsed: 0, state: {}, turns: [] }
    // An unknown field is kept (a newer core may have written it), so that checkpoint is read back and resumed: the run
    // then stops on the model nobody answers at (exit 1); the others cannot be read and nothing runs (exit 2).
    for (const [held, exit] of [
      [`{"version": 1${HOSTILE}\nforged`, 2],
      [JSON.stringify({ ...snapshot, [bad]: 1, transcript: [{ role: 'user', content: 'x' }] }), 1],
      [JSON.stringify({ ...snapshot, transcript: [{ role: bad, content: 'x' }] }), 2],
      [JSON.stringify({ ...snapshot, runId: bad, transcript: [] }), 2],
    ] as const) {
      const checkpoints = sqliteCheckpoints({ path: db })
      checkpoints.database.prepare('DELETE FROM shallot_checkpoints').run()
      checkpoints.database.prepare('INSERT INTO shallot_checkpoints (run_id, snapshot, saved_at) VALUES (?, ?, 0)').run('broken', held)
      checkpoints.close()
      const { code, err } = await shallotHere(['resume', 'broken', '--model', 'openai:m', '--checkpoints', db], {
        OPENAI_API_KEY: 'x',
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      })
      expect(code).toBe(exit)
      oneLine(err)
    }
  })
})
