import { createAgent } from '@shallot/agent'
import { defineTool, LoopError, type ModelRequest, type ModelTool, ToolError } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { type FakeProvider, type FakeTurn, fakeProvider } from '@shallot/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel } from './ai-sdk-model.js'
import { defaultModelMiddleware } from './model-stack.test-helper.js'
import { type Format, formats } from './wire-formats.test-helper.js'

// The real provider packages against fakeProvider(), through aiSdkModel, on the installed major of `ai`; agents
// ask through the default model stack, listed as `modelMiddleware: defaultModelMiddleware()`.

const files: Record<string, string> = { 'src/main.rs': 'fn main() {}' }
const readFile = defineTool({
  name: 'read_file',
  description: 'Read a file',
  input: z.object({ path: z.string() }),
  effect: 'read',
  execute: async ({ path }) => {
    const content = files[path]
    if (content === undefined) throw new ToolError('not_found', `file ${path} not found`, { hint: 'the file is src/main.rs' })
    return content
  },
})
const tools: ModelTool[] = [
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
]
const ask = (signal = new AbortController().signal): ModelRequest => ({
  messages: [{ role: 'user', content: 'read main' }],
  tools,
  signal,
})

let provider: FakeProvider
beforeEach(async () => {
  provider = await fakeProvider()
})
afterEach(async () => {
  await provider.close()
})

/** What one faulted call threw, through the real SDK. */
async function failure(format: Format, stream: boolean, turn: FakeTurn): Promise<unknown> {
  provider.script(turn)
  return aiSdkModel(format.model(provider), { stream })
    .generate(ask())
    .then(
      (r) => ({ resolved: r }),
      (error: unknown) => error,
    )
}

describe.each(formats)('aiSdkModel, $name', (format) => {
  describe.each([
    ['JSON', false],
    ['streaming', true],
  ] as const)('%s', (_mode, stream) => {
    it('completes a createAgent run with a tool call; the server sees the system prompt and the tool result', async () => {
      provider.script({ toolCalls: [{ id: 'call_1', name: 'read_file', args: { path: 'src/main.rs' } }] }, (request) => ({
        text: `main.rs holds ${request.toolResults[0]?.content}`,
      }))
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(provider), { stream, system: 'You are terse.' }),
        tools: [readFile],
        middleware: [stuckLoop()],
      })
      const outcome = await agent.run({ input: 'What is in src/main.rs?' })
      expect(outcome).toMatchObject({ status: 'completed', output: 'main.rs holds fn main() {}', turns: 2 })
      expect(provider.requests.map((r) => [r.system, r.stream, r.toolNames])).toEqual([
        ['You are terse.', stream, ['read_file']],
        ['You are terse.', stream, ['read_file']],
      ])
      expect(provider.requests[1]?.toolResults).toEqual([{ id: 'call_1', content: 'fn main() {}' }])
    })

    it("reads usage and the finish reason back; the request's system prompt wins over the option", async () => {
      provider.script({
        toolCalls: [{ id: 'call_u', name: 'read_file', args: { path: 'a' } }],
        usage: { inputTokens: 120, outputTokens: 7 },
      })
      const model = aiSdkModel(format.model(provider), { stream, system: 'default prompt' })
      const reply = await model.generate({ ...ask(), system: 'You read files.' })
      expect(reply).toEqual({
        toolCalls: [{ id: 'call_u', name: 'read_file', args: { path: 'a' } }],
        finishReason: 'tool_calls',
        usage: { inputTokens: 120, outputTokens: 7 },
      })
      expect(provider.requests[0]?.system).toBe('You read files.')
    })

    it('sends a soft error back as a failed tool result the model reads, and the run continues', async () => {
      provider.script({ toolCalls: [{ id: 'call_x', name: 'read_file', args: { path: 'nope.rs' } }] }, (request) => ({
        text: `tool said: ${request.toolResults[0]?.content}`,
      }))
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(provider), { stream }),
        tools: [readFile],
      })
      const outcome = await agent.run({ input: 'read nope.rs' })
      expect(outcome.status).toBe('completed')
      expect(outcome.status === 'completed' && outcome.output).toMatch(/not_found.*nope\.rs/s)
      if (format.api === 'anthropic-messages') expect(JSON.stringify(provider.requests[1]?.body)).toContain('"is_error":true')
    })

    it('reports a tool call cut by the output limit as finish reason length with its raw arguments', async () => {
      provider.script({ fault: 'truncated', toolCall: { id: 'call_cut', name: 'read_file', args: { path: 'src/main.rs' } } })
      const reply = await aiSdkModel(format.model(provider), { stream }).generate(ask())
      expect(reply).toMatchObject({ finishReason: 'length', toolCalls: [{ id: 'call_cut', name: 'read_file', args: '{"path":"sr' }] })
    })

    it('hands malformed tool-call JSON to the stack, which answers invalid_arguments', async () => {
      provider.script({ toolCalls: [{ id: 'call_bad', name: 'read_file', rawArgs: '{"path": "src/ma' }] }, (request) => ({
        text: request.toolResults[0]?.content ?? '',
      }))
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(provider), { stream }),
        tools: [readFile],
      })
      const outcome = await agent.run({ input: 'read' })
      expect(outcome.status === 'completed' && outcome.output).toMatch(/invalid_arguments/)
    })

    it.each([
      [{ fault: 'rate_limit', retryAfterSeconds: 2 }, 'rate_limited', 2000],
      [{ fault: 'rate_limit', retryAfterSeconds: 2, retryAfterMs: 1500 }, 'rate_limited', 1500],
      [{ fault: 'rate_limit', headers: { 'retry-after': 'soon' } }, 'rate_limited', undefined],
      [{ fault: 'server_error' }, 'upstream_error', undefined],
      [{ fault: 'overloaded', retryAfterSeconds: 1 }, 'overloaded', 1000],
      [{ fault: 'overloaded', status: 529 }, 'overloaded', undefined],
      [{ fault: 'reset' }, 'network_error', undefined],
      [{ fault: 'reset_mid_stream' }, 'network_error', undefined],
    ] as const)('classifies %j as a transient ToolError %s (retryAfterMs %s)', async (turn, code, retryAfterMs) => {
      const error = await failure(format, stream, turn as FakeTurn)
      expect(ToolError.is(error)).toBe(true)
      expect(error).toMatchObject({ code, category: 'transient', retryable: true, retryAfterMs })
    })

    it.each([
      [{ fault: 'invalid_request', message: 'messages[1]: unknown field "foo" for sk-live-0123456789abcdefghij' }, 'model_failed'],
      [{ fault: 'authentication' }, 'user_input_required'],
      [{ fault: 'permission_denied' }, 'user_input_required'],
      [{ fault: 'insufficient_quota' }, 'user_input_required'],
      [{ fault: 'context_length_exceeded' }, 'context_exceeded'],
    ] as const)('classifies %j as LoopError %s', async (turn, kind) => {
      const error = await failure(format, stream, turn as FakeTurn)
      expect(LoopError.is(error)).toBe(true)
      expect(error).toMatchObject({ kind })
      if (turn.fault === 'invalid_request') {
        expect((error as LoopError).message).toMatch(
          /^the model provider refused the request \(400 .*\): messages\[1\]: unknown field "foo"/,
        )
        expect((error as LoopError).message).not.toContain('sk-live-0123456789abcdefghij')
      }
    })

    it.each([
      [{ fault: 'invalid_request' }, 'model_failed'],
      [{ fault: 'insufficient_quota' }, 'user_input_required'],
      [{ fault: 'context_length_exceeded' }, 'context_exceeded'],
    ] as const)('a createAgent run ends on %j as %s, with a report, after one request', async (turn, kind) => {
      provider.script(turn as FakeTurn)
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(provider), { stream }),
        tools: [readFile],
      })
      const outcome = await agent.run({ input: 'read main' })
      expect(outcome).toMatchObject({ status: 'stopped', error: { kind } })
      expect(outcome.status === 'stopped' && outcome.report.text).toContain(kind)
      expect(provider.requests).toHaveLength(1)
    })

    it('a createAgent run retries a 429 and completes', async () => {
      provider.script({ fault: 'rate_limit', retryAfterSeconds: 0 }, { text: 'done' })
      const agent = createAgent({
        model: aiSdkModel(format.model(provider), { stream }),
        tools: [readFile],
        modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 0, capMs: 0 } }),
      })
      expect(await agent.run({ input: 'hi' })).toMatchObject({ status: 'completed', output: 'done' })
      expect(provider.requests.map((r) => r.outcome)).toEqual(['faulted', 'replied'])
    })

    it("a hung call ends with the caller's abort reason, not a classified error", async () => {
      provider.script({ fault: 'hang' })
      const controller = new AbortController()
      const pending = aiSdkModel(format.model(provider), { stream }).generate(ask(controller.signal))
      await provider.waitForRequest(0)
      const reason = new Error('caller gave up')
      controller.abort(reason)
      await expect(pending).rejects.toBe(reason)
    })

    it('leaves the provider SDK retries off by default: one request per call', async () => {
      provider.script({ fault: 'server_error' }, { text: 'second try' })
      const error = await aiSdkModel(format.model(provider), { stream })
        .generate(ask())
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'upstream_error' })
      expect(provider.requests).toHaveLength(1)
    })
  })

  it('an error event before any output is a transient ToolError', async () => {
    const error = await failure(format, true, { fault: 'stream_error', after: 0 })
    expect(error).toMatchObject({ category: 'transient', retryable: true })
    expect(ToolError.is(error)).toBe(true)
  })

  it('an error event after some output fails the call instead of returning the truncated text', async () => {
    const error = await failure(format, true, {
      fault: 'stream_error',
      reply: { text: 'one two three four five six seven eight' },
      after: 7,
    })
    expect(ToolError.is(error)).toBe(true)
    expect(error).toMatchObject({
      code: format.api === 'anthropic-messages' ? 'overloaded' : 'upstream_error',
      category: 'transient',
      retryable: true,
    })
  })
})
