import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../cli.js'
import { binPath, childEnv, filesystemMcp, shallot, tempDir } from './run.test-helper.js'
import { splitCommand } from './split-command.js'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const CONFIG = `stack:
  - panic-catcher
  - stuck-loop
  - policy:
      rules:
        - { action: approve, tools: write_file, reason: writing a file needs a person }
  - idempotency
  - timeout
`

/** A fake model that asks to write `target` (call id call_w), then says what it read; a config whose policy asks first. */
async function setup() {
  const fake = await fakeProvider({})
  cleanups.push(() => fake.close())
  const dir = await tempDir()
  cleanups.push(dir.remove)
  const root = dir.root
  const target = join(root, 'note.txt')
  const config = join(root, 'shallot.yaml')
  writeFileSync(config, CONFIG)
  fake.script(
    { text: 'Writing it.', toolCalls: [{ id: 'call_w', name: 'write_file', args: { path: target, content: 'from the model' } }] },
    (request) => ({ text: `Read: ${request.toolResults.map((r) => r.content).join(' | ')}` }),
  )
  const args = ['--model', 'openai:test-model', '--config', config, '--mcp', filesystemMcp(root), '--checkpoints', join(root, 'run.db')]
  return { fake, root, target, args }
}

const openaiEnv = (fake: FakeProvider) => childEnv({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL })

/**
 * `main()` in this process with a terminal's input: `answer(line)` is what the person types when
 * a prompt line is printed (a string is written with its newline; `'EOF'` ends the input there).
 */
async function atTerminal(argv: readonly string[], fake: FakeProvider, answers: Array<string | 'EOF'>) {
  vi.stubEnv('OPENAI_API_KEY', 'sk-fake-4242')
  vi.stubEnv('OPENAI_BASE_URL', fake.openaiBaseURL)
  vi.stubEnv('NO_COLOR', '1')
  cleanups.push(() => {
    vi.unstubAllEnvs()
  })
  const input = new PassThrough()
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, {
    out: (line) => {
      out.push(line)
      if (!/run it\? \[y\]es|the arguments as JSON on one line/.test(line)) return
      const next = answers.shift()
      if (next === undefined) return
      if (next === 'EOF') input.end()
      else input.write(`${next}\n`)
    },
    err: (line) => err.push(line),
    input,
    inputIsTerminal: true,
  })
  return { code, out: out.join('\n'), err: err.join('\n'), unanswered: answers, input }
}

// Each case starts real processes (an MCP server, for some the CLI itself): seconds on a loaded machine.
describe('shallot run with a policy that asks first, at a terminal', { timeout: 60_000 }, () => {
  it('y: the write runs once, the model reads its result, and the terminal is let go (exit 0)', async () => {
    const { fake, target, args } = await setup()
    const { code, out, err, input } = await atTerminal(['run', ...args, '--run-id', 'tty-1', 'Write the note'], fake, ['y'])
    expect(err).toBe('')
    expect(code).toBe(0)
    expect(out).toContain(
      `approval needed: call_w: write_file {"content":"from the model","path":"${target}"} (writing a file needs a person)`,
    )
    expect(out).toContain('call_w approved')
    expect(out).toContain(`completed: Read: Successfully wrote to ${target}`)
    expect(readFileSync(target, 'utf8')).toBe('from the model')
    // Two model calls: turn 1, and the one after the approved turn (the replay asks the model nothing).
    expect(fake.requests.map((r) => r.toolResults.length)).toEqual([0, 1])
    expect(input.listenerCount('data')).toBe(0)
  })

  it('n: the model reads denied_by_user and the file is never written', async () => {
    const { fake, target, args } = await setup()
    const { code, out } = await atTerminal(['run', ...args, 'Write the note'], fake, ['n'])
    expect(code).toBe(0)
    expect(out).toContain('call_w denied')
    expect(out).toMatch(/completed: Read: .*denied_by_user.*the user denied the call to 'write_file': denied at the terminal/)
    expect(existsSync(target)).toBe(false)
  })

  it('edit: a line that is not JSON is asked again; the edited arguments are what the tool gets', async () => {
    const { fake, root, target, args } = await setup()
    const other = join(root, 'other.txt')
    const edited = JSON.stringify({ path: other, content: 'edited by a person' })
    const { code, out } = await atTerminal(['run', ...args, 'Write the note'], fake, ['e', '{path: oops', edited])
    expect(code).toBe(0)
    expect(out).toContain('that is not JSON (')
    expect(out).toContain('call_w approved with the edited arguments')
    expect(readFileSync(other, 'utf8')).toBe('edited by a person')
    expect(existsSync(target)).toBe(false)
  })

  it('edit with a __proto__ key: refused like any bad call (the model reads why), nothing written, nothing polluted', async () => {
    const { fake, target, args } = await setup()
    const hostile = `{"__proto__":{"polluted":true},"path":${JSON.stringify(target)},"content":"x"}`
    const { code, out } = await atTerminal(['run', ...args, 'Write the note'], fake, ['edit', hostile])
    expect(code).toBe(0)
    expect(out).toMatch(/completed: Read: .*__proto__ is not an allowed argument name/)
    expect(existsSync(target)).toBe(false)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('garbage answers are asked again, three times at most, then the call is denied and the prompt says so', async () => {
    const { fake, target, args } = await setup()
    const { code, out, unanswered } = await atTerminal(['run', ...args, 'Write the note'], fake, ['maybe', 'sure', 'YES PLEASE', 'y'])
    expect(code).toBe(0)
    expect(out.split('\n').filter((line) => line === '  answer y, n or e')).toHaveLength(2)
    expect(out).toContain('no usable answer after 3 tries (answer y, n or e): call_w is denied')
    expect(unanswered).toEqual(['y'])
    expect(out).toMatch(/completed: Read: .*the user denied the call to 'write_file': no usable answer after 3 tries/)
    expect(existsSync(target)).toBe(false)
  })

  it('a huge line is dropped as it arrives, named by its length, and asked again', async () => {
    const { fake, target, args } = await setup()
    const { code, out } = await atTerminal(['run', ...args, 'Write the note'], fake, ['y'.repeat(300_000), 'n'])
    expect(code).toBe(0)
    expect(out).toContain('that line is 300000 characters; the most is 100000')
    expect(out).toContain('call_w denied')
    expect(existsSync(target)).toBe(false)
  })

  it('the end of input mid-prompt is a no, and says so; a half-typed "y" before the end approves nothing', async () => {
    const { fake, target, args } = await setup()
    const { code, out } = await atTerminal(['run', ...args, 'Write the note'], fake, ['EOF'])
    expect(code).toBe(0)
    expect(out).toContain('no answer (end of input): call_w is denied')
    expect(existsSync(target)).toBe(false)

    const second = await setup()
    vi.stubEnv('OPENAI_API_KEY', 'sk-fake-4242')
    vi.stubEnv('OPENAI_BASE_URL', second.fake.openaiBaseURL)
    const input = new PassThrough()
    input.end('y')
    const lines: string[] = []
    expect(
      await main(['run', ...second.args, 'Write the note'], { out: (l) => lines.push(l), err: () => {}, input, inputIsTerminal: true }),
    ).toBe(0)
    expect(lines.join('\n')).toContain('no answer (end of input): call_w is denied')
    expect(existsSync(second.target)).toBe(false)
  })

  it('in a real pseudo-terminal (util-linux script): the prompt is asked and y runs the write', async () => {
    const { fake, target, args } = await setup()
    const command = [process.execPath, binPath, 'run', ...args, 'Write the note'].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: openaiEnv(fake), stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let answered = false
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
      if (!answered && out.includes('[e]dit the arguments:')) {
        answered = true
        child.stdin.write('y\r')
      }
    })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(out).toContain('call_w approved')
    expect(out).toContain(`completed: Read: Successfully wrote to ${target}`)
    expect(code).toBe(0)
    expect(readFileSync(target, 'utf8')).toBe('from the model')
  })
})

// A case starts up to eight CLI processes, each with its MCP server: on a loaded machine one takes 6 s to print a usage error.
describe('shallot run with a policy that asks first, without a terminal', { timeout: 120_000 }, () => {
  it('stops with the pending call in the report and the exact shallot resume command, which approves it', async () => {
    const { fake, root, target, args } = await setup()
    const report = join(root, 'report.md')
    const first = await shallot(['run', ...args, '--report', report, '--run-id', 'wait-1', 'Write the note'], openaiEnv(fake)).exited
    expect(first.err).toBe('')
    expect(first.code).toBe(1)
    expect(first.out).toContain('stopped: user_input_required')
    expect(first.out).toContain(`call_w: write_file {"content":"from the model","path":"${target}"} (writing a file needs a person)`)
    const line = /^ {2}resume: (npx shallot resume .*)$/m.exec(first.out)?.[1] as string
    expect(line).toMatch(
      /^npx shallot resume wait-1 --checkpoints \S+run\.db --model openai:test-model --config \S+ --mcp .* --approve call_w$/,
    )
    expect(first.out).toContain(`(or --deny call_w, or --edit 'call_w=<arguments as JSON>', per call)`)
    const text = readFileSync(report, 'utf8')
    expect(text).toContain('Pending approval: 1 call')
    expect(text).toContain(`    ${line}\n`)
    expect(existsSync(target)).toBe(false)

    // The printed command, as a person pastes it into a shell.
    const [, , ...resumeArgs] = splitCommand(line, 'the resume line')
    const resumed = await shallot(resumeArgs, openaiEnv(fake)).exited
    expect(resumed.err).toBe('')
    expect(resumed.code).toBe(0)
    expect(resumed.out).toContain(`completed: Read: Successfully wrote to ${target}`)
    expect(readFileSync(target, 'utf8')).toBe('from the model')

    // Approving again runs nothing: the run is completed, so a second write would overwrite this mark.
    writeFileSync(target, 'checked by a person')
    const again = await shallot(resumeArgs, openaiEnv(fake)).exited
    expect(again.code).toBe(0)
    expect(readFileSync(target, 'utf8')).toBe('checked by a person')
    expect(fake.requests).toHaveLength(2)
  })

  it('--deny and --edit answer on the command line; a call that is not pending or bad JSON is one usage line (exit 2)', async () => {
    const { fake, root, target, args } = await setup()
    expect((await shallot(['run', ...args, '--run-id', 'wait-2', 'Write the note'], openaiEnv(fake)).exited).code).toBe(1)
    const wrongId = await shallot(['resume', 'wait-2', ...args, '--approve', 'call_x'], openaiEnv(fake)).exited
    expect(wrongId.code).toBe(2)
    expect(wrongId.err).toBe('shallot: agent.resume(): call "call_x" is not pending in run "wait-2"; pending: "call_w"\n')
    const badJson = await shallot(['resume', 'wait-2', ...args, '--edit', 'call_w={nope'], openaiEnv(fake)).exited
    expect(badJson.code).toBe(2)
    expect(badJson.err).toMatch(/^shallot: --edit call_w: the arguments are not JSON \(/)
    const twice = await shallot(['resume', 'wait-2', ...args, '--approve', 'call_w', '--deny', 'call_w'], openaiEnv(fake)).exited
    expect(twice.err).toContain('call "call_w" is answered twice')
    const onRun = await shallot(['run', ...args, '--approve', 'call_w', 'Write it'], openaiEnv(fake)).exited
    expect(onRun.err).toContain('--approve, --deny and --edit answer a stopped run: give them to shallot resume <runId>')
    expect(existsSync(target)).toBe(false)

    const other = join(root, 'other.txt')
    const edited = await shallot(
      ['resume', 'wait-2', ...args, '--edit', `call_w=${JSON.stringify({ path: other, content: 'edited' })}`],
      openaiEnv(fake),
    ).exited
    expect(edited.code).toBe(0)
    expect(readFileSync(other, 'utf8')).toBe('edited')
    expect(existsSync(target)).toBe(false)

    fake.script({ toolCalls: [{ id: 'call_w', name: 'write_file', args: { path: target, content: 'again' } }] }, (request) => ({
      text: `Read: ${request.toolResults.map((r) => r.content).join(' | ')}`,
    }))
    expect((await shallot(['run', ...args, '--run-id', 'wait-3', 'Write the note'], openaiEnv(fake)).exited).code).toBe(1)
    const denied = await shallot(['resume', 'wait-3', ...args, '--deny', 'call_w=not today'], openaiEnv(fake)).exited
    expect(denied.code).toBe(0)
    expect(denied.out).toContain("the user denied the call to 'write_file': not today")
    expect(existsSync(target)).toBe(false)
  })
})
