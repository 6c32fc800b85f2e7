import { type AgentEvent, createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, type ModelAdapter } from '@shallot/core'
import { type FakeProvider, type FakeProviderOptions, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel } from './ai-sdk-model.js'
import { defaultModelMiddleware } from './model-stack.test-helper.js'
import { type Format, formats } from './wire-formats.test-helper.js'

// createAgent's model policy (system, truncation, Retry-After, fallback, budgets) over the real
// provider packages, through aiSdkModel, against fakeProvider() on the manual clock; the retry, the
// deadline and the spare are the default model stack's layers, with fallback({ models }) outermost.

const [openaiChat, , anthropic] = formats as [Format, Format, Format]

const written: string[] = []
const writeFile = defineTool({
  name: 'write_file',
  description: 'Write a file',
  input: z.object({ path: z.string(), content: z.string() }),
  effect: 'write',
  execute: ({ path }) => {
    written.push(path)
    return `wrote ${path}`
  },
})

const providers: FakeProvider[] = []
let clock: ManualClock
async function provider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const p = await fakeProvider({ now: () => clock.now(), ...options })
  providers.push(p)
  return p
}
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()))
  written.length = 0
})

/** The agent's retry sleeps run on the manual clock: each one is waited out the moment it starts. */
function timeline(events: AgentEvent[] = []) {
  return (event: AgentEvent) => {
    // The policy's own events; run.* and model.call are asserted in core's agent-events tests.
    if (event.type === 'model.retry' || event.type === 'model.fallback' || event.type === 'model.circuit') events.push(event)
    if (event.type === 'model.retry') void clock.advance(event.delayMs)
  }
}

const named = (name: string, adapter: ModelAdapter): ModelAdapter => ({ name, generate: adapter.generate })
const writeCall = (id: string, path = 'a.txt') => ({ id, name: 'write_file', args: { path, content: 'hi' } })

describe.each(formats)('createAgent over aiSdkModel, $name', (format) => {
  describe.each([
    ['JSON', false],
    ['streaming', true],
  ] as const)('%s', (_mode, stream) => {
    it("completes a run with a tool call, sending createAgent's system prompt on every request", async () => {
      clock = manualClock()
      const p = await provider()
      p.script({ toolCalls: [writeCall('call_1')] }, (request) => ({ text: `done: ${request.toolResults[0]?.content}` }))
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(p), { stream }),
        tools: [writeFile],
        system: 'You write files.',
        clock,
      })
      expect(await agent.run({ input: 'write a.txt' })).toMatchObject({ status: 'completed', output: 'done: wrote a.txt', turns: 2 })
      expect(p.requests.map((r) => r.system)).toEqual(['You write files.', 'You write files.'])
      expect(written).toEqual(['a.txt'])
    })

    it('re-sends a 429 with Retry-After: 1 no sooner than 1 s after it, on the manual clock', async () => {
      clock = manualClock(5_000)
      const p = await provider()
      p.script({ fault: 'rate_limit', retryAfterSeconds: 1 }, { text: 'ok' })
      const events: AgentEvent[] = []
      const agent = createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(p), { stream }),
        tools: [writeFile],
        clock,
        random: () => 0.5,
        onEvent: timeline(events),
      })
      expect(await agent.run({ input: 'hi' })).toMatchObject({ status: 'completed', output: 'ok' })
      const [first, second] = p.requests
      expect([first?.outcome, second?.outcome]).toEqual(['faulted', 'replied'])
      // The 1000 ms the server asked for is a floor under the backoff's draw (half of 250 ms): the longer wait wins.
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBe(1000)
      expect(events).toMatchObject([
        {
          type: 'model.retry',
          attempt: 1,
          delayMs: 1000,
          error: expect.stringMatching(/^429 rate limited by the provider.*, Retry-After 1 s$/),
        },
      ])
    })

    it('never runs a tool call cut by the output limit; the model reads output_truncated and sends a smaller one', async () => {
      clock = manualClock()
      const p = await provider()
      p.script(
        { fault: 'truncated', toolCall: writeCall('call_cut', 'big.txt') },
        (request) =>
          request.toolResults[0]?.content.includes('output_truncated')
            ? { toolCalls: [writeCall('call_small', 'small.txt')] }
            : { text: 'no refusal seen' },
        { text: 'done' },
      )
      const outcome = await createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(p), { stream }),
        tools: [writeFile],
        clock,
      }).run({
        input: 'write',
      })
      expect(outcome).toMatchObject({ status: 'completed', output: 'done' })
      expect(written).toEqual(['small.txt'])
    })

    it("ends a 400 as model_failed after one request, quoting the provider's sanitized message", async () => {
      clock = manualClock()
      const p = await provider()
      p.script({ fault: 'invalid_request', message: 'messages[1]: unknown field "foo" for sk-live-0123456789abcdefghij' })
      const outcome = await createAgent({
        modelMiddleware: defaultModelMiddleware(),
        model: aiSdkModel(format.model(p), { stream }),
        tools: [writeFile],
        clock,
      }).run({ input: 'x' })
      expect(outcome.status).toBe('stopped')
      if (outcome.status !== 'stopped') return
      expect(outcome.error.kind).toBe('model_failed')
      expect(outcome.report.why).toMatch(
        /^the model call failed: the model provider refused the request \(400 .*\): messages\[1\]: unknown field "foo"/,
      )
      expect(outcome.report.text).not.toContain('sk-live-0123456789abcdefghij')
      expect(p.requests).toHaveLength(1)
    })
  })
})

describe('a fallback chain over two real providers', () => {
  it('a primary answering 529 until its circuit opens: the run completes on the secondary, and the next run skips the primary', async () => {
    clock = manualClock()
    const a = await provider({ script: [{ fault: 'overloaded', status: 529 }], onEnd: 'repeat' })
    const b = await provider()
    b.script({ toolCalls: [writeCall('toolu_1')] }, { text: 'done on claude' }, { text: 'second run on claude' })
    const events: AgentEvent[] = []
    const agent = createAgent({
      model: named('gpt-4o-mini', aiSdkModel(openaiChat.model(a))),
      modelMiddleware: defaultModelMiddleware({ spares: [named('claude-sonnet-4-5', aiSdkModel(anthropic.model(b)))] }),
      tools: [writeFile],
      clock,
      random: () => 0,
      onEvent: timeline(events),
    })
    expect(await agent.run({ input: 'write a.txt' })).toMatchObject({ status: 'completed', output: 'done on claude' })
    expect(a.requests.map((r) => r.outcome)).toEqual(['faulted', 'faulted', 'faulted'])
    expect(b.requests).toHaveLength(2)
    expect(events.filter((e) => e.type !== 'model.retry')).toMatchObject([
      { type: 'model.circuit', model: 'gpt-4o-mini', from: 'closed', to: 'open' },
      {
        type: 'model.fallback',
        from: 'gpt-4o-mini',
        to: 'claude-sonnet-4-5',
        reason: expect.stringMatching(/^gpt-4o-mini: 529 the provider is overloaded/),
      },
      { type: 'model.fallback', from: 'gpt-4o-mini', to: 'claude-sonnet-4-5', reason: expect.stringMatching(/skipped: circuit open/) },
    ])
    expect(await agent.run({ input: 'again' })).toMatchObject({ status: 'completed', output: 'second run on claude' })
    expect(a.requests).toHaveLength(3)
  })

  it('a primary that never answers meets the model deadline on the manual clock, and the secondary takes over', async () => {
    clock = manualClock()
    const a = await provider({ script: [{ fault: 'hang' }], onEnd: 'repeat' })
    const b = await provider({ script: [{ text: 'answered by claude' }] })
    const agent = createAgent({
      model: named('gpt-4o-mini', aiSdkModel(openaiChat.model(a))),
      modelMiddleware: defaultModelMiddleware({ spares: [named('claude-sonnet-4-5', aiSdkModel(anthropic.model(b)))], timeoutMs: 5000 }),
      tools: [writeFile],
      clock,
      random: () => 0,
      onEvent: timeline(),
    })
    const run = agent.run({ input: 'x' })
    for (let i = 0; i < 3; i++) {
      await a.waitForRequest(i)
      await clock.advance(5000)
    }
    expect(await run).toMatchObject({ status: 'completed', output: 'answered by claude' })
    expect(a.requests.map((r) => r.at)).toEqual([0, 5000, 10000])
    await a.whenIdle()
    expect(a.requests.map((r) => r.outcome)).toEqual(['client_closed', 'client_closed', 'client_closed'])
  })

  it('both failing: fallback_exhausted, checkpointed, with a report naming each model and its last error', async () => {
    clock = manualClock()
    const a = await provider({ script: [{ fault: 'overloaded', status: 529 }], onEnd: 'repeat' })
    const b = await provider({ script: [{ fault: 'rate_limit', retryAfterSeconds: 1 }], onEnd: 'repeat' })
    const checkpoints = memoryCheckpoints()
    const agent = createAgent({
      model: named('gpt-4o-mini', aiSdkModel(openaiChat.model(a))),
      modelMiddleware: defaultModelMiddleware({ spares: [named('claude-sonnet-4-5', aiSdkModel(anthropic.model(b)))] }),
      tools: [writeFile],
      clock,
      random: () => 0,
      checkpoints,
      onEvent: timeline(),
    })
    const outcome = await agent.run({ input: 'x', runId: 'down' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('fallback_exhausted')
    expect(outcome.report.why).toMatch(
      /^every model in the fallback chain was unavailable: gpt-4o-mini: 529 the provider is overloaded .*; circuit open; claude-sonnet-4-5: 429 rate limited by the provider .*, Retry-After 1 s; circuit open$/,
    )
    expect(outcome.report.text).toContain('Run down stopped: fallback_exhausted')
    expect((await checkpoints.load('down'))?.status).toBe('stopped')
    // Anthropic's re-sends each came a full second after the 429 before them.
    const gaps = b.requests.slice(1).map((r, i) => r.at - (b.requests[i]?.at ?? 0))
    expect(gaps).toEqual([1000, 1000])
  })
})

describe('limits.maxTokens over the real wire formats', () => {
  it('stops exactly when usage crosses it, checkpointed; resume continues without repeating a completed write', async () => {
    clock = manualClock()
    const p = await provider()
    p.script(
      { toolCalls: [writeCall('call_1', 'one.txt')], usage: { inputTokens: 400, outputTokens: 50 } }, // 450
      { toolCalls: [writeCall('call_2', 'two.txt')], usage: { inputTokens: 500, outputTokens: 40 } }, // 990
      { toolCalls: [writeCall('call_3', 'three.txt')], usage: { inputTokens: 600, outputTokens: 30 } }, // 1620: crosses 1000
    )
    const checkpoints = memoryCheckpoints()
    const model = aiSdkModel(anthropic.model(p))
    const first = await createAgent({
      modelMiddleware: defaultModelMiddleware(),
      model,
      tools: [writeFile],
      clock,
      checkpoints,
      limits: { maxTokens: 1000 },
    }).run({
      input: 'write three files',
      runId: 'tok',
    })
    expect(first).toMatchObject({
      status: 'stopped',
      turns: 2,
      error: { kind: 'budget_exhausted', message: 'token budget exhausted: 1620 tokens used, limits.maxTokens is 1000' },
      usage: { inputTokens: 1500, outputTokens: 120 },
    })
    expect(written).toEqual(['one.txt', 'two.txt'])
    expect(first.status === 'stopped' && first.report.nextSteps).toMatch(/raise limits\.maxTokens .*agent\.resume\('tok'\)/)

    p.script(
      { toolCalls: [writeCall('call_3', 'three.txt')], usage: { inputTokens: 700, outputTokens: 30 } },
      { text: 'three files written', usage: { inputTokens: 800, outputTokens: 10 } },
    )
    const resumed = await createAgent({
      modelMiddleware: defaultModelMiddleware(),
      model,
      tools: [writeFile],
      clock,
      checkpoints,
      limits: { maxTokens: 10_000 },
    }).resume('tok')
    expect(resumed).toMatchObject({
      status: 'completed',
      output: 'three files written',
      turns: 4,
      usage: { inputTokens: 3000, outputTokens: 160 },
    })
    expect(written).toEqual(['one.txt', 'two.txt', 'three.txt'])
  })
})
