import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { createAgent } from '@shallot/agent'
import { createStack, type ModelRequest, TOOL_TEXT_LIMITS } from '@shallot/core'
import { afterEach, describe, expect, it } from 'vitest'
import { mcpTools } from './index.js'

const fixture = fileURLToPath(new URL('./hostile-server.fixture.mjs', import.meta.url))
const INVISIBLE = /[\u{E0000}-\u{E007F}\u200B-\u200F\u2060-\u2064\uFEFF\u061C\u202A-\u202E\u2066-\u2069\u180E]/u

let open: Client[] = []
afterEach(async () => {
  await Promise.all(open.map((client) => client.close()))
  open = []
})

async function hostile(mode: 'poison' | 'endless' | 'repeat' | 'many'): Promise<Client> {
  const client = new Client({ name: 't', version: '0' })
  open.push(client)
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [fixture, mode], stderr: 'ignore' }))
  return client
}

/** What a model is sent on the first turn of an agent over these tools. */
async function firstRequest(tools: Awaited<ReturnType<typeof mcpTools>>): Promise<ModelRequest> {
  const requests: ModelRequest[] = []
  const agent = createAgent({
    model: {
      async generate(request) {
        requests.push(request)
        return { text: 'done' }
      },
    },
    tools,
  })
  await agent.run({ input: 'look up my order' })
  return requests[0] as ModelRequest
}

// Each test talks to a real server process; give a loaded CI machine room.
describe('mcpTools against a hostile MCP server', { timeout: 30_000 }, () => {
  it('sends the model tool names, descriptions and schemas without hidden characters, each capped', async () => {
    const tools = await mcpTools(await hostile('poison'))
    const request = await firstRequest(tools)

    expect(JSON.stringify(request.tools)).not.toMatch(INVISIBLE)
    const [lookup, huge] = request.tools
    expect(lookup?.name).toMatch(/^lookup[A-Za-z0-9_.-]*$/)
    expect(lookup?.description).toBe('Looks up an order. Use it for orders.')
    expect(lookup?.inputSchema).toMatchObject({ description: 'Arguments', properties: { id: { description: 'the order id' } } })
    expect(huge?.description.length).toBeLessThanOrEqual(TOOL_TEXT_LIMITS.description)
    expect(huge?.description).toMatch(/^A tool\. all work and no play .*… \[truncated from \d+ chars\]$/)
    // One 5 MB description no longer makes every request megabytes long.
    expect(JSON.stringify(request.tools).length).toBeLessThan(10_000)
  })

  it('does not run a pattern that backtracks catastrophically, and still runs a linear one', async () => {
    const tools = await mcpTools(await hostile('poison'))
    const stack = createStack({ tools })
    const lookup = [...stack.tools.keys()].find((name) => name.startsWith('lookup')) as string
    const { inputSchema } = (await firstRequest(tools)).tools[0] ?? {}

    expect(JSON.stringify(inputSchema)).not.toContain('(a+)+')
    expect(JSON.stringify(inputSchema)).toContain('^ORD-\\\\d{4}$')
    const hostileArg = await stack.dispatch({ id: 'c1', name: lookup, args: { ref: `${'a'.repeat(27)}!` } })
    expect(hostileArg).toMatchObject({ ok: true, content: expect.stringContaining('"ref":"aaaaaaaaaaaaaaaaaaaaaaaaaaa!"') })
    const badCode = await stack.dispatch({ id: 'c2', name: lookup, args: { code: 'ORD-12' } })
    expect(badCode.error?.code).toBe('invalid_arguments')
  })

  it('fails start-up, naming the server, when nextCursor never ends', async () => {
    await expect(mcpTools(await hostile('endless'), { server: 'pager' })).rejects.toThrow(
      'mcpTools(): server "pager" paged tools/list past 100 pages; its listing never ends',
    )
  })

  it('fails start-up at the first repeated cursor', async () => {
    await expect(mcpTools(await hostile('repeat'))).rejects.toThrow(
      'mcpTools(): server "hostile" sent the same tools/list cursor twice; its listing never ends',
    )
  })

  it('fails start-up when the server lists more tools than maxTools, and says how to allow more', async () => {
    await expect(mcpTools(await hostile('many'))).rejects.toThrow(
      'mcpTools(): server "hostile" lists more than 1000 tools; pass maxTools to allow more',
    )
  })
})
