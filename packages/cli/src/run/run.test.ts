import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sqliteCheckpoints, sqliteStore } from '@shallot/store-sqlite'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { childEnv, everythingServer, filesystemMcp, shallot, tempDir } from './run.test-helper.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function setup(script: Parameters<typeof fakeProvider>[0] = {}) {
  const provider = await fakeProvider(script)
  cleanups.push(() => provider.close())
  const dir = await tempDir()
  cleanups.push(dir.remove)
  return { provider, root: dir.root }
}

const openaiEnv = (provider: FakeProvider) => childEnv({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: provider.openaiBaseURL })

// Each case spawns real processes (the CLI, the MCP server); on a loaded machine that takes seconds, not milliseconds.
describe('shallot run against fakeProvider and the real filesystem MCP server', { timeout: 60_000 }, () => {
  it.each([
    ['openai', [] as string[], 'openai-chat', 'gpt-4o-mini'],
    ['openai-responses', ['--stream'], 'openai-responses', 'gpt-4o-mini'],
    ['anthropic', ['--stream'], 'anthropic-messages', 'claude-sonnet-4-5'],
  ])(
    '%s %s: completes, the file the tool wrote exists, the timeline is printed as the run goes, exit 0',
    async (provider, extra, api, model) => {
      const { provider: fake, root } = await setup()
      const target = join(root, 'hello.txt')
      let printedBeforeTurn2 = ''
      const cli = { current: undefined as ReturnType<typeof shallot> | undefined }
      fake.script(
        { text: 'Writing it.', toolCalls: [{ name: 'write_file', args: { path: target, content: 'hello from the agent' } }] },
        (request) => {
          printedBeforeTurn2 = cli.current?.stdout() ?? ''
          return { text: `Done: ${request.toolResults[0]?.content}` }
        },
      )
      const env =
        provider === 'anthropic'
          ? childEnv({ ANTHROPIC_API_KEY: 'sk-ant-fake', ANTHROPIC_BASE_URL: fake.anthropicBaseURL })
          : openaiEnv(fake)
      const html = join(root, 'timeline.html')
      const report = join(root, 'report.md')
      cli.current = shallot(
        [
          'run',
          '--model',
          `${provider}:${model}`,
          '--mcp',
          filesystemMcp(root),
          '--checkpoints',
          join(root, 'run.db'),
          '--report',
          report,
          '--html',
          html,
          ...extra,
          'Write "hello from the agent" into hello.txt',
        ],
        env,
      )
      const { code, out, err } = await cli.current.exited
      expect(err).toBe('')
      expect(code).toBe(0)
      expect(readFileSync(target, 'utf8')).toBe('hello from the agent')
      expect(fake.requests.map((r) => [r.api, r.model, r.stream])).toEqual([
        [api, model, extra.includes('--stream')],
        [api, model, extra.includes('--stream')],
      ])
      // Turn 1 and its result were on stdout while the model was still being asked for turn 2.
      expect(printedBeforeTurn2).toMatch(/turn {2}1 {2}“Writing it\.”\n\s+→ write_file .*hello\.txt.*\n\s+✓ Successfully wrote to/)
      expect(printedBeforeTurn2).not.toContain('completed:')
      expect(out).toContain(`completed: Done: Successfully wrote to ${target}`)
      expect(readFileSync(report, 'utf8')).toMatch(/^# Run run-[0-9a-f]{8}: completed\n/)
      expect(readFileSync(html, 'utf8')).toContain('write_file')
    },
  )

  it('stops a stuck model with a report file and exit 1, naming the command that resumes it', async () => {
    const { provider: fake, root } = await setup({ onEnd: 'repeat' })
    const missing = join(root, 'missing.txt')
    fake.script({ text: 'Reading it.', toolCalls: [{ name: 'read_text_file', args: { path: missing } }] })
    const report = join(root, 'report.md')
    const db = join(root, 'run.db')
    const { code, out, err } = await shallot(
      [
        'run',
        '--model',
        'openai:test-model',
        '--mcp',
        filesystemMcp(root),
        '--checkpoints',
        db,
        '--report',
        report,
        '--run-id',
        'stuck-1',
        'Read missing.txt',
      ],
      openaiEnv(fake),
    ).exited
    expect(err).toBe('')
    expect(code).toBe(1)
    expect(out).toContain('⛔ stuck-loop')
    expect(out).toContain('stopped: loop_detected')
    const text = readFileSync(report, 'utf8')
    expect(text).toMatch(/^# Run stuck-1: stopped \(loop_detected\)/)
    expect(text).toContain('Why: the model kept repeating a call that failed the same way')
    expect(text).toContain(`shallot resume stuck-1 --checkpoints ${db} --model openai:test-model --mcp`)
    // The printed command ends with a note for the person to fill in: resumed as it is, the loop stops it again.
    const resume = /\n {2}resume: npx shallot (resume stuck-1 .*)\n/.exec(out)?.[1] as string
    expect(resume.endsWith(` --note '<what you changed>'`)).toBe(true)
    const args = resume
      .replace(/ --note .*$/, '')
      .split(' ')
      .slice(2)
    expect(args.slice(0, 4)).toEqual(['--checkpoints', db, '--model', 'openai:test-model'])

    // The person creates the file the model kept asking for, and resumes with a note.
    writeFileSync(missing, 'found at last')
    // A provider of its own: the first one repeats its last step for ever.
    const model = await fakeProvider({
      script: [
        { text: 'Reading it again.', toolCalls: [{ name: 'read_text_file', args: { path: missing } }] },
        (request) => ({ text: `It says: ${request.toolResults.at(-1)?.content}` }),
      ],
    })
    cleanups.push(() => model.close())
    const mcp = ['--mcp', filesystemMcp(root)]
    const note = 'I created missing.txt; read it now'
    const resumed = await shallot(
      ['resume', 'stuck-1', '--checkpoints', db, '--model', 'openai:test-model', ...mcp, '--note', note],
      openaiEnv(model),
    ).exited
    expect(resumed.err).toBe('')
    expect(resumed.code).toBe(0)
    expect(resumed.out).toContain(`note  ${note}`)
    expect(resumed.out).toContain('completed: It says: found at last')
    // The model read the note as the last message before its next turn.
    const body = model.requests[0]?.body as { messages?: Array<{ role: string; content: unknown }> } | undefined
    expect(body?.messages?.at(-1)).toEqual({ role: 'user', content: note })
  })

  it('refuses --note on run, blank, or for a run waiting for its calls to replay, before anything starts', async () => {
    const { provider: fake } = await setup()
    const env = openaiEnv(fake)
    const onRun = await shallot(['run', '--model', 'openai:m', '--note', 'hi', 'task'], env).exited
    expect([onRun.code, onRun.err]).toEqual([
      2,
      'shallot: --note adds guidance to a stopped run: give it to shallot resume <runId>; a new run takes it in its task\n',
    ])
    const blank = await shallot(['resume', 'r1', '--checkpoints', 'x.db', '--model', 'openai:m', '--note', ' '], env).exited
    expect([blank.code, blank.err]).toEqual([2, 'shallot: --note is empty; say what you changed or what the model should do instead\n'])
    expect(fake.requests).toEqual([])
  })

  it('stops at --max-steps with exit 1 and a handoff beside the checkpoints, and resume with a larger budget continues the run', async () => {
    const { provider: fake, root } = await setup()
    // A folder a shell would misread unquoted: the handoff's command must still name it exactly.
    const folder = join(root, `Bob's "runs" $(touch pwned) \`x\``)
    mkdirSync(folder)
    const db = join(folder, 'run.db')
    const file = (n: number) => join(root, `note-${n}.txt`)
    fake.script(
      { toolCalls: [{ name: 'write_file', args: { path: file(1), content: 'one' } }] },
      { toolCalls: [{ name: 'write_file', args: { path: file(2), content: 'two' } }] },
    )
    const args = ['--model', 'openai:test-model', '--mcp', filesystemMcp(root), '--checkpoints', db]
    const report = join(root, 'report.md')
    const first = await shallot(
      ['run', ...args, '--max-steps', '3', '--run-id', 'budget-1', '--report', report, 'Write two notes'],
      openaiEnv(fake),
    ).exited
    expect(first.code).toBe(1)
    expect(first.out).toContain('stopped: budget_exhausted')
    const handoff = join(folder, 'budget-1.handoff.md')
    expect(first.out).toContain(`  handoff for a person: ${handoff}`)
    expect(readFileSync(report, 'utf8')).toContain(`The handoff for a person: ${handoff}`)
    const text = readFileSync(handoff, 'utf8')
    expect(text).toMatch(/^# Handoff: run budget-1, stopped \(budget\\_exhausted\)\n\n## Task\n\n {4}Write two notes\n/)
    expect(text).toContain(`    turn 1  write_file {"path":"${file(1)}","content":"one"}  ok`)
    expect(text).toContain('## Pending step\n\nTurn 2 did not complete')
    // The command, pasted into a shell, gives `npx shallot resume` exactly these arguments (shallot is not on PATH here).
    const command = /The command:\n\n {4}(.*)\n/.exec(text)?.[1] as string
    expect(command.startsWith('npx shallot resume budget-1 --checkpoints ')).toBe(true)
    const words = execFileSync('bash', ['-c', `printf '%s\\n' ${command.slice('npx shallot '.length)}`], { cwd: root, encoding: 'utf8' })
    expect(words.split('\n').slice(0, -1)).toEqual([
      'resume',
      'budget-1',
      '--checkpoints',
      db,
      '--model',
      'openai:test-model',
      '--mcp',
      filesystemMcp(root),
    ])
    expect(existsSync(join(root, 'pwned'))).toBe(false)
    // Turn 2's call would have been step 4: the turn is dropped before it runs, and asked for again on resume.
    expect(readFileSync(file(1), 'utf8')).toBe('one')
    expect(existsSync(file(2))).toBe(false)
    writeFileSync(file(1), 'one, checked')
    fake.script({ toolCalls: [{ name: 'write_file', args: { path: file(2), content: 'two' } }] }, { text: 'Both written.' })
    const second = await shallot(['resume', 'budget-1', ...args, '--max-steps', '20'], openaiEnv(fake)).exited
    expect(second.err).toBe('')
    expect(second.code).toBe(0)
    expect(second.out).toContain('completed: Both written.')
    // The stop it described is over: the handoff goes.
    expect(existsSync(handoff)).toBe(false)
    expect(second.out).toContain(`removed ${handoff}`)
    expect(readFileSync(file(2), 'utf8')).toBe('two')
    expect(readFileSync(file(1), 'utf8')).toBe('one, checked')
  })

  it('resume after SIGKILL mid-run executes no completed write again', async () => {
    const { provider: fake, root } = await setup()
    const db = join(root, 'run.db')
    const target = join(root, 'ledger.txt')
    fake.script(
      { text: 'Recording the payment.', toolCalls: [{ name: 'write_file', args: { path: target, content: 'paid 42.00 EUR' } }] },
      // Turn 2's answer never comes: the process is killed while it waits.
      { fault: 'hang' },
    )
    const args = ['--model', 'openai:test-model', '--mcp', filesystemMcp(root), '--checkpoints', db]
    const cli = shallot(['run', ...args, '--run-id', 'killed-1', 'Record the payment in ledger.txt'], openaiEnv(fake))
    await fake.waitForRequest(1)
    cli.child.kill('SIGKILL')
    const killed = await cli.exited
    expect(killed.signal).toBe('SIGKILL')
    expect(readFileSync(target, 'utf8')).toBe('paid 42.00 EUR')
    // Whatever now writes ledger.txt again would overwrite this mark.
    writeFileSync(target, 'paid 42.00 EUR\nchecked by a person after the crash')

    fake.script((request) => ({ text: `Recorded (${request.toolResults.length} result read back).` }))
    const resumed = await shallot(['resume', 'killed-1', ...args], openaiEnv(fake)).exited
    expect(resumed.err).toBe('')
    expect(resumed.code).toBe(0)
    expect(resumed.out).toContain('resuming run killed-1')
    expect(resumed.out).toContain('completed: Recorded (1 result read back).')
    expect(readFileSync(target, 'utf8')).toBe('paid 42.00 EUR\nchecked by a person after the crash')
    // Three model calls in all: turn 1, the one killed, and turn 2 again; turn 1 was never asked for again.
    expect(fake.requests).toHaveLength(3)
    expect(fake.requests.map((r) => r.toolResults.length)).toEqual([0, 1, 1])
  })

  it('resume after SIGKILL in the middle of a turn replays the write that ran, instead of running it again', async () => {
    const { provider: fake, root } = await setup()
    const db = join(root, 'run.db')
    const target = join(root, 'ledger.txt')
    const write = { name: 'write_file', args: { path: target, content: 'paid 42.00 EUR' } }
    // The turn's second call runs for minutes, so the turn (and its checkpoint) never ends before the kill.
    fake.script({ toolCalls: [write, { name: 'trigger-long-running-operation', args: { duration: 600, steps: 600 } }] })
    const args = [
      '--model',
      'openai:test-model',
      '--mcp',
      filesystemMcp(root),
      '--mcp',
      `"${process.execPath}" "${everythingServer}" stdio`,
      '--checkpoints',
      db,
    ]
    const cli = shallot(['run', ...args, '--run-id', 'mid-turn-1', 'Record the payment, then run the long check'], openaiEnv(fake))
    // Killed once the write's idempotency record says done: the side effect happened and was recorded, the turn was not.
    const records = sqliteStore({ path: db })
    cleanups.push(async () => records.close())
    await new Promise<void>((resolve) => {
      let settled = false
      let again: NodeJS.Immediate | undefined
      const check = () => {
        again = undefined
        if (settled) return
        const done = records.database.prepare("SELECT count(*) AS n FROM shallot_idempotency WHERE state = 'done'").get() as { n: number }
        if (done.n === 1) {
          settled = true
          watcher.close()
          resolve()
        } else if (existsSync(target) && again === undefined) {
          // The write happened; its record commits within the child's fsync (the file event can come first): ask again next tick.
          again = setImmediate(check)
        }
      }
      // The ledger's creation and every database write touch root; the check after subscribing covers any that came first.
      const watcher = watch(root, () => {
        if (again === undefined) check()
      })
      check()
    })
    cli.child.kill('SIGKILL')
    expect((await cli.exited).signal).toBe('SIGKILL')
    const checkpoints = sqliteCheckpoints({ path: db })
    cleanups.push(async () => checkpoints.close())
    expect(checkpoints.load('mid-turn-1')).toMatchObject({ turn: 0, status: 'running' })
    writeFileSync(target, 'paid 42.00 EUR\nchecked by a person after the crash')

    // The model, asked for turn 1 again, asks for the same write.
    fake.script({ toolCalls: [write] }, (request) => ({ text: `Recorded: ${request.toolResults[0]?.content}` }))
    const resumed = await shallot(['resume', 'mid-turn-1', ...args], openaiEnv(fake)).exited
    expect(resumed.err).toBe('')
    expect(resumed.code).toBe(0)
    expect(resumed.out).toContain('⟲ idempotency: replayed the stored result')
    expect(resumed.out).toContain(`completed: Recorded: Successfully wrote to ${target}`)
    expect(readFileSync(target, 'utf8')).toBe('paid 42.00 EUR\nchecked by a person after the crash')
  })
})

describe('shallot run: bad usage is one line on stderr and exit 2, before any model call', { timeout: 30_000 }, () => {
  const dirs: string[] = []
  beforeAll(async () => {
    const dir = await tempDir()
    dirs.push(dir.root)
    return dir.remove
  })
  const huge = 'x'.repeat(120_000)
  it.each([
    ['a missing key', ['--model', 'openai:gpt-4o-mini', 'hi'], {}, /^shallot: OPENAI_API_KEY is not set; export OPENAI_API_KEY=/],
    ['a missing Anthropic key', ['--model', 'anthropic:claude-sonnet-4-5', 'hi'], { OPENAI_API_KEY: 'x' }, /ANTHROPIC_API_KEY is not set/],
    ['an unknown provider', ['--model', 'opnai:gpt-4o-mini', 'hi'], {}, /unknown provider "opnai" in --model; did you mean 'openai'\?/],
    ['a model with no colon', ['--model', 'gpt-4o-mini', 'hi'], {}, /names no provider; write provider:model-id, e.g. openai:gpt-4o-mini/],
    ['an empty model id', ['--model', 'openai:', 'hi'], { OPENAI_API_KEY: 'x' }, /--model openai: has no model id/],
    ['no model at all', ['hi'], { OPENAI_API_KEY: 'x' }, /--model is required/],
    [
      'a bad base URL',
      ['--model', 'openai:m', 'hi'],
      { OPENAI_API_KEY: 'x', OPENAI_BASE_URL: 'localhost:11434' },
      /OPENAI_BASE_URL is not an http\(s\) URL/,
    ],
    ['a missing task', ['--model', 'openai:m'], { OPENAI_API_KEY: 'x' }, /run needs a task/],
    ['an empty task', ['--model', 'openai:m', '  '], { OPENAI_API_KEY: 'x' }, /run needs a task/],
    ['two tasks', ['--model', 'openai:m', 'a', 'b'], { OPENAI_API_KEY: 'x' }, /run takes one task \(quote it\)/],
    ['a huge task', ['--model', 'openai:m', huge], { OPENAI_API_KEY: 'x' }, /the task is 120000 characters; the most is 100000/],
    [
      'a server that cannot start',
      ['--model', 'openai:m', '--mcp', '/no/such/mcp-server --flag', 'hi'],
      { OPENAI_API_KEY: 'x' },
      /MCP server "mcp" \(\/no\/such\/mcp-server --flag\) did not start: .*ENOENT/,
    ],
    [
      'a server that exits at once',
      ['--model', 'openai:m', '--mcp', `"${process.execPath}" -e "console.error('no config'); process.exit(3)"`, 'hi'],
      { OPENAI_API_KEY: 'x' },
      /MCP server "mcp" .* did not start: .*\(it said: no config\)/,
    ],
    ['an unclosed quote', ['--model', 'openai:m', '--mcp', 'npx "server', 'hi'], { OPENAI_API_KEY: 'x' }, /the quote " is never closed/],
    [
      'a checkpoints folder that does not exist',
      ['--model', 'openai:m', '--checkpoints', '/no/such/folder/run.db', 'hi'],
      { OPENAI_API_KEY: 'x' },
      /--checkpoints \/no\/such\/folder\/run.db: the folder \/no\/such\/folder does not exist/,
    ],
    [
      'a bad step budget',
      ['--model', 'openai:m', '--max-steps', '1e3', 'hi'],
      { OPENAI_API_KEY: 'x' },
      /--max-steps must be a whole number from 1/,
    ],
    [
      'a missing config file',
      ['--model', 'openai:m', '--config', '/no/such.yaml', 'hi'],
      { OPENAI_API_KEY: 'x' },
      /no such file: \/no\/such.yaml/,
    ],
    ['a mistyped flag', ['--modle', 'openai:m', 'hi'], {}, /Unknown option '--modle'; did you mean '--model'\?/],
  ] as Array<[string, string[], Record<string, string>, RegExp]>)('%s', async (_, args, env, message) => {
    const { code, out, err } = await shallot(['run', ...args], childEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', ...env })).exited
    expect(code).toBe(2)
    expect(out).toBe('')
    expect(err.trimEnd().split('\n')).toHaveLength(1)
    expect(err).toMatch(message)
    expect(err).not.toMatch(/\n\s+at /)
  })

  it.each([
    ['without checkpoints', ['resume', 'run-1', '--model', 'openai:m'], /resume needs the checkpoints file the run wrote/],
    [
      'of a run the file does not hold',
      ['resume', 'run-nope', '--model', 'openai:m', '--checkpoints', 'DIR/run.db'],
      /no run "run-nope" in .*run\.db \(it holds no runs\)/,
    ],
  ])('resume %s', async (_, args, message) => {
    const { code, err } = await shallot(
      args.map((a) => a.replace('DIR', dirs[0] as string)),
      childEnv({ OPENAI_API_KEY: 'x' }),
    ).exited
    expect(code).toBe(2)
    expect(err.trimEnd().split('\n')).toHaveLength(1)
    expect(err).toMatch(message)
  })

  it('a run id the checkpoints file already holds is refused, and a corrupt checkpoint is neither resumed nor overwritten', async () => {
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const db = join(dir.root, 'run.db')
    const checkpoints = sqliteCheckpoints({ path: db })
    checkpoints.save({
      version: 1,
      runId: 'taken',
      input: 'x',
      status: 'stopped',
      turn: 1,
      stepsUsed: 2,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
    })
    checkpoints.database
      .prepare("INSERT INTO shallot_checkpoints (run_id, snapshot, saved_at) VALUES ('broken', '{\"version\": 1', 0)")
      .run()
    checkpoints.close()
    const env = childEnv({ OPENAI_API_KEY: 'x', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })
    const reused = await shallot(['run', '--model', 'openai:m', '--checkpoints', db, '--run-id', 'taken', 'hi'], env).exited
    expect(reused.code).toBe(2)
    expect(reused.err).toMatch(/already holds run "taken" \(stopped\); resume it with shallot resume taken, or pick another --run-id\n$/)
    for (const args of [
      ['resume', 'broken', '--model', 'openai:m', '--checkpoints', db],
      ['run', '--model', 'openai:m', '--checkpoints', db, '--run-id', 'broken', 'hi'],
    ]) {
      const { code, err } = await shallot(args, env).exited
      expect(code).toBe(2)
      expect(err).toMatch(
        /^shallot: The checkpoint of run "broken" cannot be read back \(not JSON .*\); the run is not resumed\. \(.*run\.db\)\n$/,
      )
    }
  })

  it('a model server nobody listens on: a stopped run (exit 1) whose report names the model, the URL and the variable', async () => {
    const closed = await fakeProvider()
    const url = closed.openaiBaseURL
    await closed.close()
    const { code, out, err } = await shallot(
      ['run', '--model', 'openai:gpt-test', 'hi'],
      childEnv({ OPENAI_API_KEY: 'x', OPENAI_BASE_URL: url }),
    ).exited
    expect(code).toBe(1)
    expect(out).toContain('stopped: model_failed')
    expect(out).toContain('    model: gpt-test\n')
    expect(out).toContain(
      `Next: Check OPENAI_BASE_URL: nothing answered at ${url} (ECONNREFUSED), then run it again with --checkpoints run.db`,
    )
    expect(err).toBe(`shallot: cannot reach the model at ${url} (ECONNREFUSED); check OPENAI_BASE_URL\n`)
  })

  it('piped, the built command prints each model retry as a plain wait line with its status and pushback', async () => {
    const fake = await fakeProvider({
      script: [{ fault: 'rate_limit', retryAfterMs: 200 }, { fault: 'server_error', status: 503 }, { text: 'Done.' }],
    })
    try {
      const { code, out, err } = await shallot(['run', '--model', 'openai:m', 'Say done'], openaiEnv(fake)).exited
      expect(err).toBe('')
      expect(code).toBe(0)
      const waits = out.split('\n').filter((l) => l.startsWith('wait'))
      expect(waits).toHaveLength(2)
      expect(waits[0]).toMatch(
        /^wait {2}0\.\d s before attempt 2 of the model openai:m: 429 rate limited .*, Retry-After 0\.2 s; within a 120 s outage budget$/,
      )
      expect(waits[1]).toMatch(/^wait {2}0\.\d s before attempt 3 of the model openai:m: 503 .*; within a 120 s outage budget$/)
      expect(out).not.toContain('\x1b')
    } finally {
      await fake.close()
    }
  })

  it('never prints the key, even when the provider quotes it back', async () => {
    const fake = await fakeProvider({ script: [{ fault: 'authentication', message: 'Incorrect API key provided: sk-fake-4242.' }] })
    try {
      const { code, out, err } = await shallot(['run', '--model', 'openai:m', 'hi'], openaiEnv(fake)).exited
      expect(code).toBe(1)
      expect(out).toContain('stopped: user_input_required')
      expect(`${out}${err}`).not.toContain('sk-fake-4242')
    } finally {
      await fake.close()
    }
  })
})
