import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { createAgent } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type AnyTool, createStack, type StackEvent } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startFilesystemServer, tempProject } from './filesystem-server.test-helper.js'
import { mcpTools, serverKey } from './index.js'

let project: Awaited<ReturnType<typeof tempProject>>
let client: Client
let tools: AnyTool[]

beforeAll(async () => {
  project = await tempProject({ 'src/main.rs': 'fn main() { println!("hello from mcp") }\n', 'README.md': '# demo\n' })
  ;({ client } = await startFilesystemServer(project.root))
  tools = await mcpTools(client, { server: 'filesystem' })
}, 30_000)

afterAll(async () => {
  await client?.close()
  await project?.remove()
})

const byName = (name: string) => tools.find((tool) => tool.name === name)

// Each test talks to a real server process; give a loaded CI machine room.
describe('mcpTools against @modelcontextprotocol/server-filesystem', { timeout: 30_000 }, () => {
  it('lists the server tools as shallot tools, effects read from their annotations', () => {
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['read_text_file', 'list_directory', 'write_file', 'edit_file']))
    expect(byName('read_text_file')?.effect).toBe('read') // readOnlyHint
    expect(byName('write_file')?.effect).toBe('idempotent') // idempotentHint, not read-only
    expect(byName('edit_file')?.effect).toBe('write') // neither
    expect(byName('read_text_file')?.description).toMatch(/file/i)
  })

  it("validates arguments with the tool's JSON Schema before the server sees them", async () => {
    const callTool = vi.spyOn(client, 'callTool')
    const stack = createStack({ tools })
    const result = await stack.dispatch({ id: 'c1', name: 'read_text_file', args: { file: 'src/main.rs' } })
    expect(result.error).toMatchObject({ code: 'invalid_arguments', hint: 'expected { path: string, tail?: number, head?: number }' })
    expect(result.content).toContain('path: Invalid input: expected string, received undefined')
    expect(callTool).not.toHaveBeenCalled()
  })

  it('lets a scripted agent mistype a path, read the soft not_found, and recover', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_text_file', args: { path: `${project.root}/src/mian.rs` } }] },
      ({ lastResults }) =>
        lastResults[0]?.ok === false && lastResults[0].content.includes('not_found')
          ? { toolCalls: [{ name: 'read_text_file', args: { path: `${project.root}/src/main.rs` } }] }
          : { text: 'could not recover' },
      ({ lastResults }) => ({ text: `main.rs: ${lastResults[0]?.content ?? ''}` }),
    ])
    const agent = createAgent({ model, tools })
    const outcome = await agent.run({ input: 'What does src/main.rs print?' })

    expect(outcome).toMatchObject({ status: 'completed', output: 'main.rs: fn main() { println!("hello from mcp") }\n' })
    const firstResult = outcome.transcript.find((message) => message.role === 'tool')
    expect(firstResult).toMatchObject({ ok: false, name: 'read_text_file' })
    expect(firstResult?.role === 'tool' && JSON.parse(firstResult.content)).toMatchObject({
      error: 'not_found',
      message: `ENOENT: no such file or directory, open '${project.root}/src/mian.rs'`,
    })
  })

  it("classifies the server's isError results by what they say", async () => {
    const stack = createStack({ tools })
    const outside = await stack.dispatch({ id: 'c1', name: 'read_text_file', args: { path: '/etc/hosts' } })
    expect(outside.error).toMatchObject({ code: 'permission_denied', category: 'recoverable', retryable: false })
    expect(outside.error?.message).toContain('Access denied - path outside allowed directories')

    const noMatch = await stack.dispatch({
      id: 'c2',
      name: 'edit_file',
      args: { path: `${project.root}/README.md`, edits: [{ oldText: 'not in the file', newText: 'x' }] },
    })
    expect(noMatch.error).toMatchObject({ code: 'tool_error', category: 'recoverable', retryable: false })

    const listing = await stack.dispatch({ id: 'c3', name: 'list_directory', args: { path: project.root } })
    expect(listing).toMatchObject({ ok: true, value: expect.stringContaining('[FILE] README.md') })
  })
})

describe('a server that disconnects', { timeout: 30_000 }, () => {
  let own: { client: Client; transport: StdioClientTransport }
  afterAll(async () => {
    await own?.client.close()
  })

  it('fails as network_error, and two failures open the breaker of every tool of that server', async () => {
    own = await startFilesystemServer(project.root)
    const fsTools = await mcpTools(own.client, { server: 'filesystem' })
    const events: StackEvent[] = []
    const stack = createStack({
      tools: fsTools,
      middleware: [circuitBreaker({ key: serverKey({ filesystem: fsTools }), policy: consecutive({ threshold: 2 }) })],
      clock: manualClock(),
    })
    stack.on((event) => events.push(event))
    const path = `${project.root}/src/main.rs`
    expect((await stack.dispatch({ id: 'c0', name: 'read_text_file', args: { path } })).ok).toBe(true)

    const closed = new Promise<void>((resolve) => {
      own.client.onclose = resolve
    })
    process.kill(own.transport.pid as number, 'SIGKILL')
    await closed
    const callTool = vi.spyOn(own.client, 'callTool')

    const first = await stack.dispatch({ id: 'c1', name: 'read_text_file', args: { path } })
    const second = await stack.dispatch({ id: 'c2', name: 'read_text_file', args: { path } })
    const third = await stack.dispatch({ id: 'c3', name: 'list_directory', args: { path: project.root } })

    expect(first.error).toMatchObject({ code: 'network_error', category: 'transient', safeToRepeat: true })
    expect(first.error?.message).toBe('MCP server "filesystem" is not connected')
    expect(second.error?.code).toBe('network_error')
    expect(third.error?.code).toBe('circuit_open')
    expect(callTool).toHaveBeenCalledTimes(2)
    expect(events.filter((e) => e.type === 'circuit-breaker.state').map((e) => [e.key, e.to])).toEqual([['mcp:filesystem', 'open']])
  })
})
