import { fileURLToPath } from 'node:url'
import { fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { UsageError } from '../usage.js'
import { inheritOf } from './command-setup.js'
import { startMcpServers, usefulStderr } from './mcp-servers.js'
import { mainHere } from './run.test-helper.js'

const envServer = fileURLToPath(new URL('../../../mcp/src/env-server.fixture.mjs', import.meta.url))
const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** `shallot run` in this process whose model asks the env server for each of `names`, then answers what it read. */
async function readThrough(names: string[], extra: string[], env: Record<string, string>) {
  const fake = await fakeProvider({})
  cleanups.push(() => fake.close())
  fake.script({ text: '', toolCalls: names.map((name) => ({ name: 'env', args: { name } })) }, (request) => ({
    text: `read ${request.toolResults.map((r) => r.content).join(' ')}`,
  }))
  return mainHere(
    ['run', '--model', 'openai:m', '--mcp', `"${process.execPath}" "${envServer}"`, ...extra, 'what is set?'],
    { OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL, ...env },
    cleanups,
  )
}

const corp = { NODE_EXTRA_CA_CERTS: '/etc/corp-ca.pem', HTTPS_PROXY: 'http://proxy:3128' }

describe('--mcp servers and the environment', { timeout: 30_000 }, () => {
  it('a server gets the whole environment by default: the CA file and the proxy reach it', async () => {
    const { code, out } = await readThrough(['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY'], [], corp)
    expect(code).toBe(0)
    expect(out).toContain('completed: read "/etc/corp-ca.pem" "http://proxy:3128"')
  })

  it('--mcp-env minimal keeps them out; --mcp-env HTTPS_PROXY lets only that one in', async () => {
    expect((await readThrough(['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY'], ['--mcp-env', 'minimal'], corp)).out).toContain(
      'completed: read null null',
    )
    expect((await readThrough(['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY'], ['--mcp-env', 'HTTPS_PROXY'], corp)).out).toContain(
      'completed: read null "http://proxy:3128"',
    )
  })

  it.each(['', 'HTTPS_PROXY,', 'A=B', 'everything else', '__proto__,x-y'])('--mcp-env "%s" is a usage error naming what it takes', (v) => {
    expect(() => inheritOf(v)).toThrow(UsageError)
    expect(() => inheritOf(v)).toThrow(/--mcp-env takes all \(the default\), minimal .* or a comma list/)
  })
})

const npm404 = [
  "console.error('npm error code E404')",
  "console.error('npm error 404 Not Found - GET https://registry.npmjs.org/@nope%2fserver - Not found')",
  "console.error('npm error 404')",
  "console.error('npm error')",
  "console.error('npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log')",
  'process.exit(1)',
].join(';')

describe('a server that fails to start', { timeout: 30_000 }, () => {
  it("fails as soon as its process exits, telling npm's 404 line and not where npm's log is", async () => {
    const started = Date.now()
    const err = await startMcpServers([{ name: 'x', command: process.execPath, args: ['-e', npm404] }]).catch((e: unknown) => e)
    // Exit before the handshake ends the start; the 30 s connect timeout is not waited for.
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(err).toBeInstanceOf(UsageError)
    const message = (err as Error).message
    expect(message).toMatch(/MCP server "x" .* did not start: .*Connection closed/)
    expect(message).toContain('it said: npm error code E404 | npm error 404 Not Found - GET https://registry.npmjs.org/@nope%2fserver')
    expect(message).not.toContain('complete log')
  })

  it('a crash tells the error line of its stack trace, and a flood of stderr is cut', () => {
    const trace = `node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/x/server.js'\n    at Module._resolveFilename (node:internal)\n    at node:internal/main:1:1 {\n  code: 'MODULE_NOT_FOUND'\n}\n\nNode.js v24.1.0\n`
    expect(usefulStderr(trace)).toBe("Error: Cannot find module '/x/server.js'")
    expect(usefulStderr('listening\nstarting\n}\n')).toBe('listening | starting')
    expect(usefulStderr('\n\n')).toBe('')
    expect(usefulStderr('x'.repeat(10_000)).length).toBe(300)
  })
})
