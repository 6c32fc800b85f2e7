import { ChatAnthropic } from '@langchain/anthropic'
import { ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { createAgent, tool } from 'langchain'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type AnthropicServer, anthropicServer, type Reply } from './anthropic-server.test-helper.js'
import { loopErrorOf, shallotMiddleware } from './index.js'

let server: AnthropicServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

// maxRetries: 0 — LangChain's own caller would otherwise retry 429/5xx itself, with real sleeps, under shallot's policy.
const claude = (url: string, streaming = false) =>
  new ChatAnthropic({ model: 'claude-test', apiKey: 'sk-ant-test', anthropicApiUrl: url, maxRetries: 0, streaming })

const readFile = tool(
  async ({ path }) => {
    if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`)
    return 'fn main() {}'
  },
  { name: 'read_file', description: 'Read a file', schema: z.object({ path: z.string() }) },
)
const readsBoth: Reply = {
  reply: 'message',
  content: [
    { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/mian.rs' } },
    { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: { path: 'src/main.rs' } },
  ],
}
const done: Reply = { reply: 'message', content: [{ type: 'text', text: 'done' }] }
const ask = { messages: [{ role: 'user', content: 'What does src/main.rs do?' }] }

type Turn = { role: string; content: unknown }
const toolResults = (request: Record<string, unknown> | undefined) =>
  ((request?.messages ?? []) as Turn[])
    .flatMap((turn) => (Array.isArray(turn.content) ? turn.content : []))
    .filter((block) => block.type === 'tool_result')

describe('ChatAnthropic: soft errors on the wire', () => {
  it('LangChain alone sends a failed tool result without is_error', async () => {
    server = await anthropicServer([readsBoth, done])
    const agent = createAgent({ model: claude(server.url), tools: [readFile] })
    await agent.invoke(ask)
    const [failed] = toolResults(server.requests[1])
    expect(failed).toMatchObject({ tool_use_id: 'toolu_1' })
    expect(failed).not.toHaveProperty('is_error')
  })

  it.each([false, true])(
    'behind shallotMiddleware marks the failed result is_error: true, in one user turn (streaming: %s)',
    async (streaming) => {
      server = await anthropicServer([readsBoth, done])
      const agent = createAgent({ model: claude(server.url, streaming), tools: [readFile], middleware: [shallotMiddleware()] })
      const { messages } = await agent.invoke(ask)

      expect(messages.at(-1)?.text).toBe('done')
      const turns = server.requests[1]?.messages as Turn[]
      expect(turns.map((turn) => turn.role)).toEqual(['user', 'assistant', 'user'])
      expect(toolResults(server.requests[1])).toEqual([
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: '{"error":"not_found","message":"file src/mian.rs not found"}',
          is_error: true,
        },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: 'fn main() {}' },
      ])
      // The agent's own state keeps the ToolMessages; only the request changed.
      expect(messages.filter((m) => m.type === 'tool').map((m) => (m as { status?: string }).status)).toEqual(['error', 'success'])
    },
  )
})

describe('ChatAnthropic: deadline and backoff on model calls', () => {
  it('aborts a stalled stream at the deadline and asks again', async () => {
    server = await anthropicServer([{ reply: 'stall' }, done])
    const clock = manualClock()
    const agent = createAgent({
      model: claude(server.url, true),
      tools: [readFile],
      middleware: [shallotMiddleware({ clock, random: () => 0, modelCall: { timeoutMs: 5000 } })],
    })
    const invocation = agent.invoke(ask)
    await vi.waitFor(() => expect(server?.requests).toHaveLength(1))
    await clock.advance(4999)
    expect(server.requests).toHaveLength(1)
    await clock.advance(1)
    // Riding out an outage, the default model stack waits at least half its first 250 ms ceiling (equal jitter).
    await clock.advance(125)
    const { messages } = await invocation
    expect(messages.at(-1)?.text).toBe('done')
    expect(server.requests).toHaveLength(2)
    await vi.waitFor(() => expect(server?.abandoned).toBe(1)) // the stalled request was closed, not left hanging
  })

  it('stops with model_failed when every attempt stalls', async () => {
    server = await anthropicServer([{ reply: 'stall' }, { reply: 'stall' }])
    const clock = manualClock()
    const agent = createAgent({
      model: claude(server.url, true),
      tools: [readFile],
      middleware: [shallotMiddleware({ clock, random: () => 0, modelCall: { timeoutMs: 5000, maxAttempts: 2 } })],
    })
    const invocation = agent.invoke(ask)
    const outcome = expect(invocation).rejects.toSatisfy((error: unknown) => {
      const hard = loopErrorOf(error)
      return (
        hard?.kind === 'model_failed' && hard.message === 'the model call failed after 2 attempts: the model did not answer within 5000 ms'
      )
    })
    await vi.waitFor(() => expect(server?.requests).toHaveLength(1))
    await clock.advance(5000)
    await vi.waitFor(() => expect(server?.requests).toHaveLength(2))
    await clock.advance(5000)
    await outcome
    await vi.waitFor(() => expect(server?.abandoned).toBe(2))
  })

  it('backs off on 529 and 429, never sooner than Retry-After', async () => {
    server = await anthropicServer([
      { reply: 'error', status: 529, type: 'overloaded_error' },
      { reply: 'error', status: 429, type: 'rate_limit_error', headers: { 'retry-after': '3' } },
      done,
    ])
    const clock = manualClock()
    const agent = createAgent({
      model: claude(server.url),
      tools: [readFile],
      middleware: [shallotMiddleware({ clock, random: () => 0.5, modelCall: { maxAttempts: 3, baseMs: 1000 } })],
    })
    const invocation = agent.invoke(ask)
    await vi.waitFor(() => expect(server?.requests).toHaveLength(1))
    await clock.advance(499) // full jitter: 0.5 × 1000 ms
    expect(server.requests).toHaveLength(1)
    await clock.advance(1)
    await vi.waitFor(() => expect(server?.requests).toHaveLength(2))
    await clock.advance(2999) // the backoff would be 1000 ms; the server asked for 3 s
    expect(server.requests).toHaveLength(2)
    await clock.advance(1)
    const { messages } = await invocation
    expect(messages.at(-1)?.text).toBe('done')
    expect(server.requests).toHaveLength(3)
  })

  it('does not repeat a request the server refused for good', async () => {
    server = await anthropicServer([{ reply: 'error', status: 400, type: 'invalid_request_error' }, done])
    const agent = createAgent({ model: claude(server.url), tools: [readFile], middleware: [shallotMiddleware({ clock: manualClock() })] })
    await expect(agent.invoke(ask)).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'model_failed')
    expect(server.requests).toHaveLength(1)
  })

  it('gives up at once when Retry-After is longer than it will wait', async () => {
    server = await anthropicServer([{ reply: 'error', status: 429, type: 'rate_limit_error', headers: { 'retry-after': '600' } }, done])
    const agent = createAgent({ model: claude(server.url), tools: [readFile], middleware: [shallotMiddleware({ clock: manualClock() })] })
    await expect(agent.invoke(ask)).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'model_failed')
    expect(server.requests).toHaveLength(1)
  })

  it('ends as cancelled when the caller aborts during the backoff', async () => {
    server = await anthropicServer([{ reply: 'error', status: 503, type: 'api_error' }, done])
    const manual = manualClock()
    const sleeps: number[] = []
    const clock = {
      ...manual,
      sleep: (ms: number, signal?: AbortSignal) => {
        sleeps.push(ms)
        return manual.sleep(ms, signal)
      },
    }
    const agent = createAgent({ model: claude(server.url), tools: [readFile], middleware: [shallotMiddleware({ clock })] })
    const controller = new AbortController()
    const invocation = agent.invoke(ask, { signal: controller.signal })
    // LangGraph races the run against the caller's signal, so invoke rejects with the caller's own reason.
    const outcome = expect(invocation).rejects.toThrow('user pressed stop')
    await vi.waitFor(() => expect(sleeps).toHaveLength(1)) // the backoff (the attempt's deadline is a timer, not a sleep)
    controller.abort(new Error('user pressed stop'))
    await outcome
    expect(manual.pending).toBe(0)
    expect(server.requests).toHaveLength(1)
  })
})
