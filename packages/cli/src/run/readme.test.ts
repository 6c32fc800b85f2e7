// The READMEs' `shallot run` samples, executed as written: the shell lines with the built CLI in place of
// `npx @shallot/cli` / `npx shallot`, the key of their `export` line, and OPENAI_BASE_URL at a fakeProvider. The MCP
// server command (`npx -y @modelcontextprotocol/server-filesystem .`) runs verbatim: npx finds the server in this
// package's node_modules, so it starts offline.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fakeProvider } from '@shallot/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { childEnv, shallot } from './run.test-helper.js'
import { splitCommand } from './split-command.js'

const packageDir = fileURLToPath(new URL('../..', import.meta.url))
const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

/** The first fenced block of `lang` after `heading`. */
function blockAfter(markdown: string, heading: string, lang: string): string {
  const at = markdown.indexOf(heading)
  expect(at, `no heading ${heading}`).toBeGreaterThanOrEqual(0)
  const open = markdown.indexOf(`\`\`\`${lang}\n`, at)
  const close = markdown.indexOf('\n```', open + 1)
  return markdown.slice(open + lang.length + 4, close)
}

/** A shell block: its `export NAME=value` lines as env, its `npx …` lines as argv for the built CLI. */
function shellLines(block: string): { env: Record<string, string>; commands: string[][] } {
  const env: Record<string, string> = {}
  const commands: string[][] = []
  for (const line of block.split('\n').filter((l) => l.trim() !== '')) {
    const exported = /^export ([A-Z_]+)=(\S+)$/.exec(line)
    if (exported !== null) {
      env[exported[1] as string] = exported[2] as string
      continue
    }
    const words = splitCommand(line, 'README line')
    const skip = words[0] === 'npx' && (words[1] === '@shallot/cli' || words[1] === 'shallot') ? 2 : 0
    expect(skip, `a line that is not a shallot command: ${line}`).toBe(2)
    commands.push(words.slice(skip))
  }
  return { env, commands }
}

// Inside this package (so npx finds the filesystem server); `.docs-run/` is ignored by git.
const scratch = join(packageDir, '.docs-run')
mkdirSync(scratch, { recursive: true })
const cwd = mkdtempSync(join(scratch, 'run-'))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

describe('README: Run it against a real model', { timeout: 90_000 }, () => {
  it('the two lines run an agent that lists the folder through the filesystem server', async () => {
    const { env, commands } = shellLines(blockAfter(read('../../../../README.md'), '## Run it against a real model', 'sh'))
    expect(Object.keys(env)).toEqual(['OPENAI_API_KEY'])
    expect(commands).toHaveLength(1)
    const fake = await fakeProvider({
      script: [
        { toolCalls: [{ name: 'list_directory', args: { path: cwd } }] },
        (r) => ({ text: `The folder holds: ${r.toolResults[0]?.content}` }),
      ],
    })
    try {
      writeFileSync(join(cwd, 'hello.txt'), 'hi')
      const { code, out, err } = await shallot(commands[0] as string[], childEnv({ ...env, OPENAI_BASE_URL: fake.openaiBaseURL }), cwd)
        .exited
      expect(err).toBe('')
      expect(code).toBe(0)
      expect(out).toContain('completed: The folder holds: [FILE] hello.txt')
      expect(fake.requests[0]?.toolNames).toContain('list_directory')
    } finally {
      await fake.close()
    }
  })
})

describe('packages/cli README: shallot run', { timeout: 90_000 }, () => {
  const readme = read('../../README.md')

  it('run stops with a report, and the resume line continues it', async () => {
    const { env, commands } = shellLines(blockAfter(readme, '## shallot run: a real agent', 'sh'))
    const [run, resume] = commands as [string[], string[]]
    const fake = await fakeProvider({ script: [{ fault: 'invalid_request', message: 'Unsupported parameter: temperature' }] })
    try {
      const first = await shallot(run, childEnv({ ...env, OPENAI_BASE_URL: fake.openaiBaseURL }), cwd).exited
      expect(first.code).toBe(1)
      expect(first.out).toContain('stopped: model_failed')
      const runId = /^run (run-[0-9a-f]{8}) /m.exec(first.out)?.[1] as string
      const report = readFileSync(join(cwd, 'report.md'), 'utf8')
      expect(report).toContain('Unsupported parameter: temperature')
      // The README's resume line, for the id this run printed.
      expect(report).toContain(`shallot resume ${runId} --checkpoints run.db --model openai:gpt-4o-mini --mcp`)
      // The handoff beside run.db, which the report names.
      const handoff = join(cwd, `${runId}.handoff.md`)
      expect(report).toContain(`The handoff for a person: ${handoff}`)
      expect(readFileSync(handoff, 'utf8')).toContain(
        `\n    npx shallot resume ${runId} --checkpoints run.db --model openai:gpt-4o-mini --mcp`,
      )
      fake.script({ text: 'This is @shallot/cli.' })
      const placeholder = resume[1] as string
      const second = await shallot(
        resume.map((w) => (w === placeholder ? runId : w)),
        childEnv({ ...env, OPENAI_BASE_URL: fake.openaiBaseURL }),
        cwd,
      ).exited
      expect(second.err).toBe('')
      expect(second.code).toBe(0)
      expect(second.out).toContain('completed: This is @shallot/cli.')
      expect(existsSync(join(cwd, `${runId}.handoff.md`))).toBe(false)
    } finally {
      await fake.close()
    }
  })

  it('the config file with model: and mcpServers: runs as shallot run --config shallot.yaml', async () => {
    const file = join(cwd, 'shallot.yaml')
    writeFileSync(file, blockAfter(readme, 'The model and the servers can live in the config file', 'yaml'))
    const fake = await fakeProvider({ script: [{ text: 'Nothing to do.' }] })
    try {
      const { code, out, err } = await shallot(
        ['run', '--config', 'shallot.yaml', 'Say hello'],
        childEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.openaiBaseURL }),
        cwd,
      ).exited
      expect(err).toBe('')
      expect(code).toBe(0)
      expect(out).toMatch(/openai:gpt-4o-mini · 14 tools \(read_file, .*\) · stack of shallot.yaml/)
      expect(fake.requests[0]?.model).toBe('gpt-4o-mini')
      expect(fake.requests[0]?.toolNames).toContain('write_file')
    } finally {
      await fake.close()
    }
  })
})
