import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError, checkConfig, createStackFromConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-config-run-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const write = (text: string) => {
  const file = join(dir, `config-${++files}.yaml`)
  writeFileSync(file, text)
  return file
}

describe('model: and mcpServers: (read by shallot run, ignored by stacks)', () => {
  it('keeps both as written, and a stack is built from the file as if they were not there', async () => {
    const config = await loadConfig(
      write(`model: anthropic:claude-sonnet-4-5
mcpServers:
  files: npx -y @modelcontextprotocol/server-filesystem .
  search: { command: node, args: [search.js, --port, "0"], env: { TOKEN: abc }, cwd: tools }
stack: [retry]
`),
    )
    expect(config.document.model).toBe('anthropic:claude-sonnet-4-5')
    expect(config.document.mcpServers).toEqual({
      files: 'npx -y @modelcontextprotocol/server-filesystem .',
      search: { command: 'node', args: ['search.js', '--port', '0'], env: { TOKEN: 'abc' }, cwd: 'tools' },
    })
    expect(createStackFromConfig(config, { tools: [] }).config.layers.map((l) => l.name)).toEqual(['retry'])
    expect((await checkConfig(config.file as string)).error).toBeUndefined()
  })

  it.each([
    ['a model with no provider', 'model: gpt-4o-mini', /model: must be provider:model-id/],
    ['a model with an empty id', 'model: "openai:"', /model: must be provider:model-id/],
    ['a server that is a number', 'mcpServers: { files: 42 }', /mcpServers.files: must be a command line/],
    ['a server with an unknown key', 'mcpServers: { files: { command: npx, argv: [x] } }', /mcpServers.files.argv: unknown key "argv"/],
    ['a server name with a space', 'mcpServers: { "my files": npx x }', /must be a server name/],
    ['__proto__ as a server name', 'mcpServers: { __proto__: npx x }', /__proto__|server name/],
  ])('refuses %s, naming the line', async (_, line, message) => {
    const err = await loadConfig(write(`${line}\nstack: [retry]\n`)).catch((e: unknown) => e)
    expect(ConfigError.is(err)).toBe(true)
    expect((err as ConfigError).message).toMatch(message)
    expect((err as ConfigError).issues[0]?.line).toBe(1)
  })
})
