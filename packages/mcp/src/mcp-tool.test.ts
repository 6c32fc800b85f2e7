import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { createStack, LoopError } from '@shallot/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { mcpTools } from './index.js'

/** A real SDK server over the SDK's in-memory transport, with a tool that waits until the test lets it go. */
async function connectedPair() {
  const server = new McpServer({ name: 'waiter', version: '1.0.0' })
  let seenSignal: AbortSignal | undefined
  let started = () => {}
  const running = new Promise<void>((resolve) => {
    started = resolve
  })
  server.registerTool(
    'wait',
    { description: 'Waits until cancelled', inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } },
    async (_args, extra) => {
      seenSignal = extra.signal
      started()
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }))
      return { content: [{ type: 'text', text: 'stopped' }] }
    },
  )
  server.registerTool('steps', { inputSchema: { n: z.number() } }, async ({ n }, extra) => {
    const token = extra._meta?.progressToken
    for (let i = 1; i <= n; i++) {
      if (token !== undefined)
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } })
    }
    return { content: [{ type: 'text', text: `${n} steps` }] }
  })
  server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
    structuredContent: { echoed: text },
  }))
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'shallot-test', version: '0.0.0' })
  await client.connect(clientSide)
  return { client, server, running, seen: () => seenSignal }
}

let pair: Awaited<ReturnType<typeof connectedPair>> | undefined
afterEach(async () => {
  vi.useRealTimers()
  await pair?.client.close()
  pair = undefined
})

describe('mcpTool', () => {
  it('names the server after what it announced, and returns the text of a result', async () => {
    pair = await connectedPair()
    const tools = await mcpTools(pair.client, { prefix: 'w_' })
    const stack = createStack({ tools })
    expect(tools.map((tool) => [tool.name, tool.effect])).toEqual([
      ['w_wait', 'read'],
      ['w_steps', 'write'],
      ['w_echo', 'write'],
    ])
    expect(await stack.dispatch({ id: 'c1', name: 'w_echo', args: { text: 'hi' } })).toMatchObject({ ok: true, value: 'hi' })
  })

  it("returns the whole CallToolResult with output: 'result'", async () => {
    pair = await connectedPair()
    const stack = createStack({ tools: await mcpTools(pair.client, { output: 'result', include: ['echo'] }) })
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
    expect(result.value).toMatchObject({ structuredContent: { echoed: 'hi' }, content: [{ type: 'text', text: 'hi' }] })
  })

  it('reports a connection that closes mid-call as network_error, not safe to repeat', async () => {
    pair = await connectedPair()
    const stack = createStack({ tools: await mcpTools(pair.client) })
    const call = stack.dispatch({ id: 'c1', name: 'wait', args: { ms: 1 } })
    await pair.running
    await pair.server.close()
    const result = await call
    expect(result.error).toMatchObject({ code: 'network_error', category: 'transient', retryable: true, safeToRepeat: false })
    expect(result.error?.message).toBe('MCP server "waiter" closed the connection during wait')
  })

  it('cancels the request on the server when the call is aborted, and the run ends as cancelled', async () => {
    pair = await connectedPair()
    const stack = createStack({ tools: await mcpTools(pair.client) })
    const controller = new AbortController()
    const call = stack.dispatch({ id: 'c1', name: 'wait', args: { ms: 1 } }, { signal: controller.signal })
    await pair.running
    controller.abort(new Error('user pressed Ctrl-C'))
    await expect(call).rejects.toSatisfy(LoopError.is)
    await expect(call).rejects.toMatchObject({ kind: 'cancelled' })
    await vi.waitFor(() => expect(pair?.seen()?.aborted).toBe(true))
  })

  it("answers the SDK's own request deadline as a soft timeout", async () => {
    pair = await connectedPair()
    vi.useFakeTimers()
    const stack = createStack({ tools: await mcpTools(pair.client, { requestTimeoutMs: 500 }) })
    const call = stack.dispatch({ id: 'c1', name: 'wait', args: { ms: 1 } })
    await pair.running
    await vi.advanceTimersByTimeAsync(500)
    expect((await call).error).toMatchObject({ code: 'timeout', message: 'MCP server "waiter" did not answer wait in time' })
  })

  it('reports progress to onProgress, and a listener that throws fails nothing', async () => {
    pair = await connectedPair()
    const seen: Array<[number, number | undefined]> = []
    const onProgress = ({ progress, total }: { progress: number; total?: number | undefined }) => {
      seen.push([progress, total])
      throw new Error('the UI is gone')
    }
    const stack = createStack({ tools: await mcpTools(pair.client, { include: ['steps'], onProgress }) })
    expect(await stack.dispatch({ id: 'c1', name: 'steps', args: { n: 3 } })).toMatchObject({ ok: true, value: '3 steps' })
    expect(seen).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ])
  })

  it('refuses a cap below the deadline, and reconnection without connect()', async () => {
    pair = await connectedPair()
    await expect(mcpTools(pair.client, { requestTimeoutMs: 5000, maxTotalMs: 1000 })).rejects.toThrow(
      'option maxTotalMs: must be at least requestTimeoutMs (5000)',
    )
    const { client } = pair
    const bare = {
      listTools: client.listTools.bind(client),
      callTool: client.callTool.bind(client),
      getServerVersion: client.getServerVersion.bind(client),
    }
    await expect(mcpTools(bare, { transport: () => ({}) })).rejects.toThrow('option transport needs a Client with connect() and close()')
  })

  it('refuses include and effects that name tools the server does not have', async () => {
    pair = await connectedPair()
    await expect(mcpTools(pair.client, { include: ['wiat'] })).rejects.toThrow(
      'server "waiter" has no tool named "wiat"; it has wait, steps, echo',
    )
    await expect(mcpTools(pair.client, { prefix: 'a b' })).rejects.toThrow('option prefix')
  })
})
