import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterEach, describe, expect, it } from 'vitest'
import { MINIMAL_ENV_VARS, type ServerEnvOptions, serverEnv } from './index.js'

const fixture = fileURLToPath(new URL('./env-server.fixture.mjs', import.meta.url))
let open: Client[] = []
afterEach(async () => {
  await Promise.all(open.map((client) => client.close()))
  open = []
})

/** What a real server process started with `serverEnv(options)` reads for each of `names`. */
async function seen(options: ServerEnvOptions, names: string[]): Promise<Array<string | null>> {
  const client = new Client({ name: 't', version: '0' })
  open.push(client)
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [fixture], env: serverEnv(options), stderr: 'ignore' }))
  const out: Array<string | null> = []
  for (const name of names) {
    const result = (await client.callTool({ name: 'env', arguments: { name } })) as { content: Array<{ text: string }> }
    out.push(JSON.parse(result.content[0]?.text ?? 'null'))
  }
  return out
}

const from = { ...process.env, NODE_EXTRA_CA_CERTS: '/etc/corp-ca.pem', HTTPS_PROXY: 'http://proxy:3128', SHOULD_NOT: 'leak' }

describe('serverEnv: what a stdio MCP server process gets', { timeout: 30_000 }, () => {
  it('passes the whole environment by default: the CA file and the proxy reach the server', async () => {
    expect(await seen({ from }, ['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY', 'SHOULD_NOT'])).toEqual([
      '/etc/corp-ca.pem',
      'http://proxy:3128',
      'leak',
    ])
  })

  it('minimal passes only the SDK minimum; a list adds the names given; env: is set on top', async () => {
    expect(await seen({ from, inherit: 'minimal' }, ['NODE_EXTRA_CA_CERTS', 'SHOULD_NOT', 'PATH'])).toEqual([
      null,
      null,
      process.env.PATH ?? null,
    ])
    expect(await seen({ from, inherit: ['HTTPS_PROXY'], env: { LOG: 'debug' } }, ['HTTPS_PROXY', 'SHOULD_NOT', 'LOG'])).toEqual([
      'http://proxy:3128',
      null,
      'debug',
    ])
  })

  it('never passes an exported shell function, and a variable named __proto__ is a plain variable', () => {
    const env = serverEnv({ from: { FN: '() { evil; }', ['__proto__' as string]: 'x', OK: '1' } as NodeJS.ProcessEnv })
    expect(env.FN).toBeUndefined()
    expect(env.OK).toBe('1')
    expect(Object.getPrototypeOf(env)).toBe(Object.prototype)
    expect(serverEnv({ inherit: 'minimal', from: { HOME: '/h', OTHER: 'o' } })).toEqual({ HOME: '/h' })
    expect(MINIMAL_ENV_VARS).toContain('PATH')
  })

  it.each([
    [{ inherit: 'everything' }, /inherit must be "all", "minimal" or a list of variable names, not "everything"/],
    [{ inherit: ['HTTPS_PROXY', 'A=B'] }, /inherit names environment variables .* not "A=B"/],
    [{ inherit: ['__proto__ x'] }, /not "__proto__ x"/],
  ])('rejects %j with an error naming the option and what it takes', (options, message) => {
    expect(() => serverEnv(options as ServerEnvOptions)).toThrow(message)
  })
})
