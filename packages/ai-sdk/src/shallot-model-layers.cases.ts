import { LoopError, type ModelEvent, type ModelMiddleware, OptionsError } from '@shallot/core'
import { type FakeProvider, type FakeProviderOptions, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { generateText, type ModelMessage, stepCountIs, streamText, ToolLoopAgent, tool } from 'ai'
import { contextEditing, defaultModelMiddleware, fallback } from 'shallot'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { aiSdkModel, shallotModel, shallotTools } from './index.js'
import { type Format, formats } from './wire-formats.test-helper.js'

// The model layers other than retry, under the AI SDK: a deadline, the caller's cancel, a spare model, a breaker
// shared by every generation, a token budget, context editing, ToolLoopAgent, and options refused by name. Shared
// by ai 6 (shallot-model-layers.test.ts) and ai 7 (shallot-model-layers.node22.test.ts).

const [openaiChat] = formats as [Format, ...Format[]]
const providers: FakeProvider[] = []
let clock: ManualClock
async function provider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const p = await fakeProvider({ now: () => clock.now(), ...options })
  providers.push(p)
  return p
}
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()))
})

function onEvent(events: ModelEvent[] = []) {
  return (event: ModelEvent) => {
    events.push(event)
    if (event.type === 'model.retry') void clock.advance(event.delayMs)
  }
}

async function settled<T>(work: PromiseLike<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await work }
  } catch (error) {
    return { error }
  }
}

/** A conversation with three earlier tool results of about 400 characters each. */
const conversation = (): ModelMessage[] => {
  const messages: ModelMessage[] = [{ role: 'user', content: 'Summarise the three files.' }]
  for (const n of [1, 2, 3]) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: `call_${n}`, toolName: 'read_file', input: { path: `f${n}.txt` } }],
    })
    messages.push({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: `call_${n}`,
          toolName: 'read_file',
          output: { type: 'text', value: `file ${n}: ${'x'.repeat(400)}` },
        },
      ],
    })
  }
  return messages
}

describe.each(formats)('shallotModel layers, $name', (format) => {
  it('cuts an attempt that never answers at the deadline and asks again', async () => {
    clock = manualClock()
    const p = await provider()
    p.script({ fault: 'hang' }, { text: 'second try' })
    const model = shallotModel(format.model(p), {
      modelMiddleware: defaultModelMiddleware({ timeout: { ms: 5_000 } }),
      clock,
      random: () => 0,
      onEvent: onEvent(),
    })
    const pending = generateText({ model, prompt: 'hi' })
    await p.waitForRequest(0)
    await clock.advance(5_000)
    expect((await pending).text).toBe('second try')
    await p.whenIdle()
    expect(p.requests.map((r) => r.outcome)).toEqual(['client_closed', 'replied'])
  })

  it("ends with the caller's abort reason when the caller cancels, and the request is closed", async () => {
    clock = manualClock()
    const p = await provider()
    p.script({ fault: 'hang' })
    const controller = new AbortController()
    const pending = settled(generateText({ model: shallotModel(format.model(p), { clock }), prompt: 'hi', abortSignal: controller.signal }))
    await p.waitForRequest(0)
    const reason = new Error('the user pressed stop')
    controller.abort(reason)
    expect((await pending).error).toBe(reason)
    await p.whenIdle()
    expect(p.requests.map((r) => r.outcome)).toEqual(['client_closed'])
  })

  it('moves on to a spare AI SDK model when the first keeps failing, and says so in a model.fallback event', async () => {
    clock = manualClock()
    const down = await provider({ script: [{ fault: 'server_error' }], onEnd: 'repeat' })
    const spare = await provider({ script: [{ text: 'from the spare' }] })
    const events: ModelEvent[] = []
    const model = shallotModel(format.model(down), {
      modelMiddleware: [fallback({ models: [aiSdkModel(format.model(spare), { name: 'spare' })] }), ...defaultModelMiddleware()],
      clock,
      random: () => 0,
      onEvent: onEvent(events),
    })
    const { text } = await generateText({ model, prompt: 'hi' })
    expect(text).toBe('from the spare')
    expect(down.requests).toHaveLength(3)
    expect(spare.requests).toHaveLength(1)
    expect(events.filter((e) => e.type === 'model.fallback').map((e) => (e as { to?: string }).to)).toEqual(['spare'])
  })

  it('sends the request it was given, byte for byte, when no layer edits it', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ text: 'a' }, { text: 'b' }] })
    await generateText({ model: format.model(p), system: 'Be brief.', messages: conversation() })
    await generateText({ model: shallotModel(format.model(p), { clock }), system: 'Be brief.', messages: conversation() })
    expect(p.requests[1]?.body).toEqual(p.requests[0]?.body)
  })

  it('context editing clears all but the last tool result before a request over its budget', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ text: 'summary' }] })
    const model = shallotModel(format.model(p), {
      modelMiddleware: [contextEditing({ maxInputTokens: 200, keep: 1 }), ...defaultModelMiddleware()],
      clock,
    })
    const { text } = await generateText({ model, system: 'Be brief.', messages: conversation() })
    expect(text).toBe('summary')
    const results = p.requests[0]?.toolResults.map((r) => [r.id, r.content.slice(0, 7)])
    expect(results).toEqual([
      ['call_1', '[cleare'],
      ['call_2', '[cleare'],
      ['call_3', 'file 3:'],
    ])
    expect(p.requests[0]?.system).toBe('Be brief.')
  })
})

describe('shallotModel layers: one wrapped model across generations (OpenAI Chat Completions)', () => {
  it('keeps one breaker per model: after three failed generations the fourth is refused without a request', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ fault: 'server_error' }], onEnd: 'repeat' })
    const model = shallotModel(openaiChat.model(p), { modelMiddleware: defaultModelMiddleware({ retry: false }), clock })
    for (let i = 0; i < 3; i++) await settled(generateText({ model, prompt: 'hi' }))
    const { error } = await settled(generateText({ model, prompt: 'hi' }))
    expect(LoopError.is(error) && error.message).toMatch(/circuit/)
    expect(p.requests).toHaveLength(3)
  })

  it('counts tokens into the run: a final answer past the limit completes, the next call is refused before it is sent', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ text: 'first', usage: { inputTokens: 80, outputTokens: 30 } }, { text: 'never sent' }] })
    const model = shallotModel(openaiChat.model(p), { limits: { maxTokens: 100 }, clock })
    expect((await generateText({ model, prompt: 'hi' })).text).toBe('first')
    const { error } = await settled(generateText({ model, prompt: 'again' }))
    expect(LoopError.is(error) && error.kind).toBe('budget_exhausted')
    expect(p.requests).toHaveLength(1)
  })

  it('stops an answer with tool calls that goes past the token limit: the tool never runs', async () => {
    clock = manualClock()
    const p = await provider({
      script: [{ toolCalls: [{ name: 'send', args: { to: 'bob' } }], usage: { inputTokens: 90, outputTokens: 20 } }],
    })
    let sent = 0
    const send = tool({ inputSchema: z.object({ to: z.string() }), execute: async () => ++sent })
    const model = shallotModel(openaiChat.model(p), { limits: { maxTokens: 100 }, clock })
    const { error } = await settled(generateText({ model, prompt: 'send it', tools: { send }, stopWhen: stepCountIs(3) }))
    expect(LoopError.is(error) && error.kind).toBe('budget_exhausted')
    expect(sent).toBe(0)
  })

  it("counts a stream's usage when its last part passes, for the next call", async () => {
    clock = manualClock()
    const p = await provider({ script: [{ text: 'streamed', usage: { inputTokens: 70, outputTokens: 40 } }, { text: 'never sent' }] })
    const model = shallotModel(openaiChat.model(p), { limits: { maxTokens: 100 }, clock })
    expect(await streamText({ model, prompt: 'hi' }).text).toBe('streamed')
    const { error } = await settled(generateText({ model, prompt: 'again' }))
    expect(LoopError.is(error) && error.kind).toBe('budget_exhausted')
    expect(p.requests).toHaveLength(1)
  })

  it('ToolLoopAgent with shallot in front of the model and the tools survives a 429 and a 503 and completes', async () => {
    clock = manualClock()
    const p = await provider()
    p.script(
      { fault: 'rate_limit', retryAfterSeconds: 1 },
      { toolCalls: [{ id: 'call_1', name: 'read_file', args: { path: 'src/main.rs' } }] },
      { fault: 'overloaded', status: 503 },
      (request) => ({ text: `it holds ${request.toolResults[0]?.content}` }),
    )
    const readFile = tool({ inputSchema: z.object({ path: z.string() }), execute: async () => 'fn main() {}' })
    const shallot = shallotTools({ read_file: readFile }, { effects: { read_file: 'read' } })
    const agent = new ToolLoopAgent({
      model: shallotModel(openaiChat.model(p), { clock, random: () => 0, onEvent: onEvent() }),
      tools: shallot.tools,
      stopWhen: [stepCountIs(5), shallot.stopOnHardError],
    })
    const result = await agent.generate({ prompt: 'What is in src/main.rs?' })
    expect(result.text).toBe('it holds fn main() {}')
    expect(p.requests.map((r) => r.outcome)).toEqual(['faulted', 'replied', 'faulted', 'replied'])
  })

  it("reports a stop in the model layers as createAgent would: the completed steps, the model's failure, what to do", async () => {
    clock = manualClock()
    const p = await provider({ script: [{ toolCalls: [{ id: 'call_1', name: 'read_file', args: { path: 'a.txt' } }] }] })
    p.script({ fault: 'server_error' }, { fault: 'server_error' }, { fault: 'server_error' })
    const readFile = tool({ inputSchema: z.object({ path: z.string() }), execute: async () => 'alpha' })
    const shallot = shallotTools({ read_file: readFile }, { effects: { read_file: 'read' }, task: 'Read a.txt' })
    const { error } = await settled(
      generateText({
        model: shallotModel(openaiChat.model(p), { clock, random: () => 0, onEvent: onEvent() }),
        prompt: 'Read a.txt',
        tools: shallot.tools,
        abortSignal: shallot.abortSignal,
        stopWhen: [stepCountIs(5), shallot.stopOnHardError],
      }),
    )
    expect(LoopError.is(error) && error.kind).toBe('model_failed')
    const report = shallot.report(error)
    expect(report).toMatchObject({ task: 'Read a.txt', completedTurns: 1, failed: { kind: 'model_failed' }, resume: undefined })
    expect(report?.completedCalls.map((c) => [c.name, c.ok])).toEqual([['read_file', true]])
    expect(report?.nextSteps).toBe(
      'Check the model provider (status, credentials, quota), then generate again with the conversation so far.',
    )
    expect(shallot.report()).toBeUndefined()
  })

  it('sends what a layer made of the request: its system prompt, the tools it kept, the turns keepLast kept', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ text: 'ok' }] })
    const note: ModelMiddleware = async (ctx, next) => {
      ctx.request = {
        ...ctx.request,
        system: `${ctx.request.system} Answer in French.`,
        tools: ctx.request.tools.filter((t) => t.name !== 'drop_db'),
      }
      await next()
    }
    const model = shallotModel(openaiChat.model(p), {
      modelMiddleware: [note, contextEditing({ strategy: 'keepLast', keep: 1, maxInputTokens: 100 }), ...defaultModelMiddleware()],
      clock,
    })
    const noop = tool({ inputSchema: z.object({}), execute: async () => '' })
    await generateText({ model, system: 'Be brief.', messages: conversation(), tools: { read_file: noop, drop_db: noop } })
    const sent = p.requests[0]
    expect(sent?.system).toBe('Be brief. Answer in French.')
    expect(sent?.toolNames).toEqual(['read_file'])
    expect(sent?.toolResults.map((r) => r.id)).toEqual(['call_3'])
    const messages = (sent?.body as { messages: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? []
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool'])
    expect(messages[1]?.content).toBe('Summarise the three files.')
  })

  it('stops waiting out a Retry-After the moment the caller cancels, and sends nothing more', async () => {
    clock = manualClock()
    const p = await provider({ script: [{ fault: 'rate_limit', retryAfterSeconds: 30 }, { text: 'never sent' }] })
    const controller = new AbortController()
    const retried: ModelEvent[] = []
    const model = shallotModel(openaiChat.model(p), { clock, random: () => 0, onEvent: (e) => retried.push(e) })
    const pending = settled(generateText({ model, prompt: 'hi', abortSignal: controller.signal }))
    await p.waitForRequest(0)
    await vi.waitFor(() => expect(retried.map((e) => e.type)).toContain('model.retry'))
    const reason = new Error('the user left')
    controller.abort(reason)
    expect((await pending).error).toBe(reason)
    await clock.advance(60_000)
    expect(p.requests).toHaveLength(1)
  })

  it('fifty streams, each cancelled by its caller after the first chunk, all close their requests', async () => {
    clock = manualClock()
    const p = await provider({
      script: [{ fault: 'stall', reply: { text: 'one two three four five six seven eight' }, after: 5 }],
      onEnd: 'repeat',
    })
    const model = shallotModel(openaiChat.model(p), { clock })
    const firsts = await Promise.all(
      Array.from({ length: 50 }, async () => {
        // The request outlives the attempt (settled at the first chunk): the caller's signal still ends it.
        const caller = new AbortController()
        const result = streamText({ model, prompt: 'count', abortSignal: caller.signal, onError: () => {} })
        for await (const part of result.textStream) {
          caller.abort()
          return part
        }
        return undefined
      }),
    )
    expect(firsts.every((text) => typeof text === 'string' && text.length > 0)).toBe(true)
    await p.whenIdle()
    expect(p.requests).toHaveLength(50)
    expect(new Set(p.requests.map((r) => r.outcome))).toEqual(new Set(['client_closed']))
  })

  it('refuses an unknown option by name, a model id string, and a cost limit without the price of its model', () => {
    const p = { provider: 'openai.chat', modelId: 'gpt-4o-mini', doGenerate: () => {}, doStream: () => {} }
    expect(() => shallotModel(p as never, { retries: 3 } as never)).toThrow(OptionsError)
    expect(() => shallotModel(p as never, { retries: 3 } as never)).toThrow(/retries/)
    expect(() => shallotModel('openai/gpt-4o' as never)).toThrow(/language model object/)
    expect(() => shallotModel(p as never, { limits: { maxCostUsd: 1 } })).toThrow(/prices\['gpt-4o-mini'\]/)
    expect(() => shallotModel(p as never, { limits: { maxTokens: Number.NaN } })).toThrow(OptionsError)
  })
})
