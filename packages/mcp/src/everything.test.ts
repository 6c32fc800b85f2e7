import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createStack, LoopError, type StackEvent } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { connectClient, everythingTransport, pidOf, type Sdk, startEverythingHttp, type Wire } from './everything-server.test-helper.js'
import { indictsServer, mcpTools, serverKey } from './index.js'

const LONG = 'trigger-long-running-operation'
const matrix: Array<[Sdk, Wire]> = [
  ['v1', 'stdio'],
  ['v1', 'http'],
  ['v2', 'stdio'],
  ['v2', 'http'],
]

type Http = Awaited<ReturnType<typeof startEverythingHttp>>
type Sent = { method?: string; id?: unknown; params?: { requestId?: unknown; name?: string } }

/** A transport whose outgoing JSON-RPC messages are recorded. */
function recording(transport: unknown): { transport: unknown; sent: Sent[] } {
  const sent: Sent[] = []
  const target = transport as { send: (message: Sent, options?: unknown) => Promise<void> }
  const send = target.send.bind(target)
  target.send = (message, options) => {
    sent.push(message)
    return send(message, options)
  }
  return { transport, sent }
}

const processGone = (pid: number) => {
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

// Real server processes: give a loaded CI machine room.
describe.each(matrix)('@modelcontextprotocol/server-everything, SDK %s over %s', { timeout: 30_000 }, (sdk, wire) => {
  let http: Http | undefined
  let clients: Array<{ close(): Promise<void> }> = []
  beforeEach(async () => {
    if (wire === 'http') http = await startEverythingHttp()
  })
  afterEach(async () => {
    vi.useRealTimers()
    await Promise.all(clients.map((client) => client.close().catch(() => {})))
    clients = []
    await http?.stop()
    http = undefined
  })
  const connect = async (transport = everythingTransport(sdk, wire, http?.url)) => {
    const client = await connectClient(sdk, transport)
    clients.push(client)
    return client
  }

  it('lets a 5 s tool that reports progress every second finish under a 2 s deadline; maxTotalMs still cuts it', async () => {
    const client = await connect()
    const progress: number[] = []
    // Virtual time: each progress notification is one second of the tool's run.
    const onProgress = ({ progress: step }: { progress: number }) => {
      progress.push(step)
      vi.advanceTimersByTime(1000)
    }
    const args = { duration: 0.5, steps: 5 }
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })

    // The SDK alone, with a 2 s timeout and a progress listener: cut at the second "second".
    const raw = sdk === 'v1' ? [undefined, { timeout: 2000, onprogress: onProgress }] : [{ timeout: 2000, onprogress: onProgress }]
    await expect((client.callTool as (...a: unknown[]) => Promise<unknown>)({ name: LONG, arguments: args }, ...raw)).rejects.toThrow(
      /timed out/i,
    )
    progress.length = 0

    const finishes = createStack({ tools: await mcpTools(client, { include: [LONG], requestTimeoutMs: 2000, onProgress }) })
    expect(await finishes.dispatch({ id: 'c1', name: LONG, args })).toMatchObject({
      ok: true,
      value: 'Long running operation completed. Duration: 0.5 seconds, Steps: 5.',
    })
    expect(progress.slice(0, 3)).toEqual([1, 2, 3]) // at least 3 virtual seconds under a 2 s deadline

    const capped = createStack({ tools: await mcpTools(client, { include: [LONG], requestTimeoutMs: 2000, maxTotalMs: 3000, onProgress }) })
    const cut = await capped.dispatch({ id: 'c2', name: LONG, args })
    expect(cut.error).toMatchObject({
      code: 'timeout',
      category: 'transient',
      message: `MCP server "mcp-servers/everything" did not answer ${LONG} in time`,
    })
  })

  it('sends notifications/cancelled when the call is aborted, and the run ends as cancelled', async () => {
    const { transport, sent } = recording(everythingTransport(sdk, wire, http?.url))
    const client = await connect(transport)
    const controller = new AbortController()
    const stack = createStack({
      tools: await mcpTools(client, { include: [LONG], onProgress: () => controller.abort(new Error('user pressed Ctrl-C')) }),
    })

    const call = stack.dispatch({ id: 'c1', name: LONG, args: { duration: 10, steps: 100 } }, { signal: controller.signal })

    await expect(call).rejects.toSatisfy((error: unknown) => LoopError.is(error) && error.kind === 'cancelled')
    const request = sent.find((message) => message.method === 'tools/call')
    expect(sent).toContainEqual(
      expect.objectContaining({ method: 'notifications/cancelled', params: expect.objectContaining({ requestId: request?.id }) }),
    )
  })

  it('reports a server killed mid-call as a transport failure, never as tool_panic', async () => {
    const transport = everythingTransport(sdk, wire, http?.url)
    const client = await connect(transport)
    let killed: Promise<unknown> | undefined
    const kill = () => (wire === 'stdio' ? Promise.resolve(process.kill(pidOf(transport) as number, 'SIGKILL')) : (http as Http).stop())
    const stack = createStack({
      tools: await mcpTools(client, {
        server: 'everything',
        include: [LONG],
        requestTimeoutMs: 5000,
        onProgress: () => {
          killed ??= kill()
        },
      }),
    })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    const call = stack.dispatch({ id: 'c1', name: LONG, args: { duration: 10, steps: 100 } })
    await vi.waitFor(() => expect(killed).toBeDefined(), { interval: 5 })
    await killed
    if (wire === 'http') {
      // Over HTTP the SDK keeps the request open while it tries to resume the event stream: the deadline ends it.
      await vi.advanceTimersByTimeAsync(5000)
      expect((await call).error).toMatchObject({ code: 'timeout', category: 'transient' })
    } else {
      expect((await call).error).toMatchObject({
        code: 'network_error',
        category: 'transient',
        safeToRepeat: false,
        message: `MCP server "everything" closed the connection during ${LONG}`,
      })
    }
  })

  it('opens the server breaker when the server dies, and the half-open probe reconnects', async () => {
    let transport = everythingTransport(sdk, wire, http?.url)
    const client = await connect(transport)
    const firstPid = pidOf(transport)
    const tools = await mcpTools(client, {
      server: 'everything',
      include: ['echo'],
      transport: () => {
        transport = everythingTransport(sdk, wire, http?.url)
        return transport
      },
    })
    const clock = manualClock()
    const events: StackEvent[] = []
    const stack = createStack({
      tools,
      middleware: [
        circuitBreaker({
          key: serverKey({ everything: tools }),
          isFailure: indictsServer,
          policy: consecutive({ threshold: 1 }),
          cooldownMs: 30_000,
        }),
      ],
      clock,
    })
    stack.on((event) => events.push(event))
    const echo = (id: string) => stack.dispatch({ id, name: 'echo', args: { message: id } })
    expect(await echo('before')).toMatchObject({ ok: true, value: 'Echo: before' })

    if (wire === 'stdio') {
      process.kill(firstPid as number, 'SIGKILL')
      await vi.waitFor(() => expect(processGone(firstPid as number)).toBe(true))
    } else {
      await http?.stop()
    }
    const failed = await echo('dead')
    expect(failed.error).toMatchObject({ code: 'network_error', category: 'transient' })
    expect((await echo('refused')).error?.code).toBe('circuit_open')

    if (wire === 'http') http = await startEverythingHttp(http?.port)
    await clock.advance(30_000)
    expect(await echo('probe')).toMatchObject({ ok: true, value: 'Echo: probe' })
    expect(await echo('after')).toMatchObject({ ok: true, value: 'Echo: after' })
    if (wire === 'stdio') expect(pidOf(transport)).not.toBe(firstPid)
    expect(events.filter((e) => e.type === 'circuit-breaker.state').map((e) => e.to)).toEqual(['open', 'half-open', 'closed'])
  })
})
