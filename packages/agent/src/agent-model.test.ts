import {
  type Clock,
  defineTool,
  LoopError,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AgentEvent, createAgent, memoryCheckpoints } from './index.js'

type Step = ModelResponse | Error | ((request: ModelRequest) => ModelResponse | Error)

/** A model that plays `steps` in order and records each request, with its arrival time on `clock`. */
function model(name: string | undefined, steps: Step[], clock?: Clock): ModelAdapter & { requests: Array<ModelRequest & { at: number }> } {
  const requests: Array<ModelRequest & { at: number }> = []
  let i = 0
  return {
    ...(name === undefined ? {} : { name }),
    requests,
    async generate(request) {
      requests.push({ ...request, at: clock?.now() ?? 0 })
      const step = steps[Math.min(i++, steps.length - 1)] as Step
      const answer = typeof step === 'function' ? step(request) : step
      if (answer instanceof Error) throw answer
      return answer
    },
  }
}

let writes = 0
const write = defineTool({
  name: 'write_file',
  description: 'Write a file',
  input: z.object({ path: z.string(), content: z.string() }),
  effect: 'write',
  execute: ({ path }) => {
    writes++
    return `wrote ${path}`
  },
})
const call = (id: string) => ({ toolCalls: [{ id, name: 'write_file', args: { path: 'a.txt', content: 'hi' } }] })
const overloaded = () =>
  new ToolError('overloaded', 'the model provider is overloaded (529 overloaded_error): Overloaded', {
    category: 'transient',
    retryable: true,
    details: { status: 529, type: 'overloaded_error', providerMessage: 'Overloaded' },
  })

describe('createAgent({ system })', () => {
  it('sends the system prompt with every model call', async () => {
    const m = model(undefined, [call('c1'), { text: 'done' }])
    const outcome = await createAgent({ model: m, tools: [write], system: 'You are terse.' }).run({ input: 'write a' })
    expect(outcome.status).toBe('completed')
    expect(m.requests.map((r) => r.system)).toEqual(['You are terse.', 'You are terse.'])
  })

  it('leaves system out of the request when there is none', async () => {
    const m = model(undefined, [{ text: 'done' }])
    await createAgent({ model: m, tools: [write] }).run({ input: 'x' })
    expect('system' in (m.requests[0] as object)).toBe(false)
  })
})

describe("the request's signal", () => {
  it('is an own, enumerable accessor: Object.keys lists it, a spread copy keeps a live signal, and each call has its own', async () => {
    const seen: Array<{ keys: string[]; descriptor: PropertyDescriptor | undefined; copied: AbortSignal; request: ModelRequest }> = []
    const adapter: ModelAdapter = {
      async generate(request) {
        const copy = { ...request }
        seen.push({
          keys: Object.keys(request),
          descriptor: Object.getOwnPropertyDescriptor(request, 'signal'),
          copied: copy.signal,
          request,
        })
        return seen.length === 1 ? call('c1') : { text: 'done' }
      },
    }
    const outcome = await createAgent({ model: adapter, tools: [write] }).run({ input: 'write a' })
    expect(outcome.status).toBe('completed')
    expect(seen).toHaveLength(2)
    for (const { keys, descriptor, copied } of seen) {
      expect(keys).toContain('signal')
      expect(descriptor?.enumerable).toBe(true)
      expect(descriptor?.configurable).toBe(true)
      expect(typeof descriptor?.get).toBe('function')
      expect(copied).toBeInstanceOf(AbortSignal)
      // The attempt settled when the adapter answered: the signal it was handed is aborted now.
      expect(copied.aborted).toBe(true)
    }
    expect(seen[0]?.copied).not.toBe(seen[1]?.copied)
    // Read again after the attempt settled: the same, already aborted signal.
    expect(seen[0]?.request.signal).toBe(seen[0]?.copied)
  })
})

describe('a reply cut by the output-token limit', () => {
  it('never runs its tool calls; the model reads output_truncated and the turn spends a step', async () => {
    writes = 0
    const m = model(undefined, [
      { ...call('cut'), finishReason: 'length' },
      (request) => ({ text: `tool said ${(request.messages.at(-1) as { content: string }).content}` }),
    ])
    const outcome = await createAgent({ model: m, tools: [write] }).run({ input: 'write a' })
    expect(writes).toBe(0)
    expect(outcome.status).toBe('completed')
    const tool = outcome.transcript.find((msg) => msg.role === 'tool')
    expect(tool).toMatchObject({ role: 'tool', callId: 'cut', ok: false })
    expect(JSON.parse((tool as { content: string }).content)).toEqual({
      error: 'output_truncated',
      message: 'your output was cut off by the output-token limit, so this tool call was not run: its arguments are incomplete',
      hint: 'send smaller arguments: split the work into several calls, or write less in each one',
    })
    // Two model calls and the truncated turn.
    expect(outcome.steps).toBe(3)
  })

  it('a model that keeps getting cut off meets the step budget', async () => {
    writes = 0
    const m = model(undefined, [{ ...call('cut'), finishReason: 'length' }])
    const outcome = await createAgent({ model: m, tools: [write], limits: { maxSteps: 5 } }).run({ input: 'write a' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'budget_exhausted' } })
    expect(writes).toBe(0)
  })
})

describe('one attempt per model call (no modelMiddleware)', () => {
  it('a transient failure ends the run as model_failed after the one attempt: retry is a layer', async () => {
    const m = model(undefined, [overloaded(), { text: 'never' }])
    const outcome = await createAgent({ model: m, tools: [write] }).run({ input: 'x' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      error: {
        kind: 'model_failed',
        message: 'the model call failed after 1 attempt: the model provider is overloaded (529 overloaded_error): Overloaded',
      },
    })
    expect(m.requests).toHaveLength(1)
    expect(outcome.status === 'stopped' && outcome.report.why).toBe('the model call failed: 529 the provider is overloaded (Overloaded)')
  })

  it('treats a generate() that throws before returning a promise like one that rejects', async () => {
    const events: string[] = []
    const agent = createAgent({
      model: {
        generate() {
          throw overloaded()
        },
      },
      tools: [write],
      onEvent: (event) => events.push(event.type === 'model.call' ? `model.call ${event.attempt} ${event.code ?? 'ok'}` : event.type),
    })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'stopped', steps: 1, error: { kind: 'model_failed' } })
    expect(events).toEqual(['run.started', 'model.call 1 overloaded', 'run.finished'])
  })

  it.each([
    ['context_exceeded', "the request does not fit the model's context window (400 context_length_exceeded): too long"],
    ['user_input_required', "the model provider's quota or billing is exhausted (429 insufficient_quota): pay up"],
    ['model_failed', 'the model provider refused the request (400 invalid_request_error): bad field'],
  ] as const)('a LoopError %s from the adapter ends the run at once with its reason', async (kind, message) => {
    const m = model(undefined, [new LoopError(kind, message, { details: { status: 400, providerMessage: 'x' } }), { text: 'never' }])
    const outcome = await createAgent({ model: m, tools: [write] }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind, message } })
    expect(m.requests).toHaveLength(1)
    expect(outcome.status === 'stopped' && outcome.report.why).toContain(message)
  })
})

describe('token and cost budgets', () => {
  const usage = (inputTokens: number, outputTokens: number) => ({ usage: { inputTokens, outputTokens } })

  it('stops exactly when usage crosses limits.maxTokens, checkpointed; resume with a higher limit continues', async () => {
    writes = 0
    const checkpoints = memoryCheckpoints()
    const steps: Step[] = [
      { ...call('c1'), ...usage(300, 100) }, // 400
      { ...call('c2'), ...usage(400, 100) }, // 900
      { ...call('c3'), ...usage(1, 100) }, // 1001: crosses
    ]
    const first = model(undefined, steps)
    const outcome = await createAgent({ model: first, tools: [write], checkpoints, limits: { maxTokens: 1000 } }).run({
      input: 'x',
      runId: 'tok',
    })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error).toMatchObject({
      kind: 'budget_exhausted',
      message: 'token budget exhausted: 1001 tokens used, limits.maxTokens is 1000',
    })
    expect(outcome.usage).toEqual({ inputTokens: 701, outputTokens: 300, costUsd: 0 })
    // The call that crossed is not run: two turns committed, two writes.
    expect(writes).toBe(2)
    expect(outcome.turns).toBe(2)
    expect(outcome.report.why).toBe(
      'the run spent its whole budget (limits.maxTokens): token budget exhausted: 1001 tokens used, limits.maxTokens is 1000',
    )
    expect(outcome.report.nextSteps).toContain(
      "raise limits.maxTokens (the run keeps what it spent), otherwise narrow the task; then resume it with agent.resume('tok')",
    )
    expect((await checkpoints.load('tok'))?.usage).toEqual({ inputTokens: 701, outputTokens: 300, costUsd: 0 })

    // The same limit: resume stops before asking the model again.
    const same = model(undefined, [{ text: 'never' }])
    const still = await createAgent({ model: same, tools: [write], checkpoints, limits: { maxTokens: 1000 } }).resume('tok')
    expect(still).toMatchObject({ status: 'stopped', error: { kind: 'budget_exhausted' } })
    expect(same.requests).toHaveLength(0)

    const more = model(undefined, [
      { ...call('c3'), ...usage(10, 5) },
      { text: 'done', ...usage(10, 5) },
    ])
    const resumed = await createAgent({ model: more, tools: [write], checkpoints, limits: { maxTokens: 5000 } }).resume('tok')
    expect(resumed).toMatchObject({ status: 'completed', output: 'done', turns: 4 })
    expect(resumed.usage).toEqual({ inputTokens: 721, outputTokens: 310, costUsd: 0 })
    expect(writes).toBe(3)
  })

  it('a run whose usage reached the limit exactly makes no further call: any call would cross it', async () => {
    const m = model(undefined, [{ ...call('c1'), ...usage(900, 100) }, { text: 'never' }])
    const outcome = await createAgent({ model: m, tools: [write], limits: { maxTokens: 1000 } }).run({ input: 'x' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      turns: 1,
      error: { kind: 'budget_exhausted', message: 'token budget exhausted: 1000 tokens used, limits.maxTokens is 1000' },
    })
    expect(m.requests).toHaveLength(1)
  })

  it('a final answer that crosses the budget still completes: it is paid for and ends the run', async () => {
    const m = model(undefined, [{ text: 'done', ...usage(900, 200) }])
    expect(await createAgent({ model: m, tools: [write], limits: { maxTokens: 1000 } }).run({ input: 'x' })).toMatchObject({
      status: 'completed',
    })
  })
})

describe('hostile adapters and checkpoints', () => {
  it.each([
    [{ inputTokens: Number.NaN, outputTokens: -5 }],
    [{ inputTokens: '900' as never, outputTokens: Number.POSITIVE_INFINITY }],
    [null as never],
  ])('ignores a usage report that is not a finite count (%j): it cannot spend or refund the budget', async (bad) => {
    const m = model(undefined, [
      { ...call('c1'), usage: bad },
      { text: 'done', usage: { inputTokens: 10, outputTokens: 2 } },
    ])
    const outcome = await createAgent({ model: m, tools: [write], limits: { maxTokens: 100 } }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'completed', usage: { inputTokens: 10, outputTokens: 2, costUsd: 0 } })
  })

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['a string', 'done'],
  ])('stops as model_failed on an adapter that answers %s, naming it, and spends one step', async (_label, answer) => {
    const events: AgentEvent[] = []
    const agent = createAgent({
      model: { generate: async () => answer as never },
      tools: [write],
      onEvent: (event) => events.push(event),
    })
    const outcome = await agent.run({ input: 'x' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      steps: 1,
      error: { kind: 'model_failed', message: 'the model call failed after 1 attempt: the model adapter returned no response object' },
    })
    expect(events.filter((e) => e.type === 'model.call')).toMatchObject([{ attempt: 1, code: 'TypeError' }])
  })

  it('refuses to resume a checkpoint whose usage record is corrupt, naming the run', async () => {
    const checkpoints = memoryCheckpoints()
    const agent = createAgent({ model: model(undefined, [{ text: 'x' }]), tools: [write], checkpoints })
    await checkpoints.save({
      version: 1,
      runId: 'bad',
      input: 'x',
      status: 'stopped',
      turn: 0,
      stepsUsed: 0,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
      usage: { inputTokens: -1, outputTokens: 0, costUsd: 0 },
    })
    await expect(agent.resume('bad')).rejects.toThrow(/the checkpoint of run "bad" has a corrupt usage record/)
  })
})

describe('hostile model and budget options', () => {
  const ok = model('m', [{ text: 'x' }])
  const make = (options: Record<string, unknown>) => () => createAgent({ model: ok, tools: [write], ...options } as never)

  it.each([Number.NaN, -1, 0, 1.5, Number.POSITIVE_INFINITY, '1000'])('rejects limits.maxTokens %s naming the fix', (value) => {
    expect(make({ limits: { maxTokens: value } })).toThrow(OptionsError)
    expect(make({ limits: { maxTokens: value } })).toThrow(/option limits\.maxTokens: must be a whole number of tokens > 0, e\.g\. 200000/)
  })

  it.each([Number.NaN, -0.01, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'rejects limits.maxCostUsd %s naming the fix',
    (value) => {
      expect(make({ limits: { maxCostUsd: value }, prices: { m: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } } })).toThrow(
        /option limits\.maxCostUsd: must be a finite number of US dollars > 0, e\.g\. 2\.5/,
      )
    },
  )

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY, '3'])('rejects a price of %s', (value) => {
    expect(make({ prices: { m: { inputPerMTokUsd: value, outputPerMTokUsd: 1 } } })).toThrow(
      /option prices\.m\.inputPerMTokUsd: must be a finite number of US dollars >= 0 per million tokens/,
    )
  })

  it('rejects a price table holding __proto__, as JSON.parse makes it or as a literal sets it', () => {
    const parsed = JSON.parse('{"__proto__": {"inputPerMTokUsd": 1, "outputPerMTokUsd": 1}}') as Record<string, unknown>
    expect(make({ prices: parsed })).toThrow(/option prices\.__proto__: "__proto__" names no model; key prices by the models' names \(m\)/)
    const literal = { __proto__: { m: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } } }
    expect(make({ prices: literal })).toThrow(/option prices: must be a plain object/)
    expect(({} as Record<string, unknown>).inputPerMTokUsd).toBeUndefined()
  })

  it('rejects a price for a model the chain does not have, with the name it meant', () => {
    expect(make({ prices: { n: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 }, mm: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } } })).toThrow(
      /option prices\.n: names no model of the chain/,
    )
    expect(() =>
      createAgent({
        model: model('gpt-4o-mini', []),
        tools: [write],
        prices: { 'gpt-4o-mnii': { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } },
      }),
    ).toThrow(/did you mean 'gpt-4o-mini'\?/)
  })

  it('rejects a system prompt that is not a string, and an onEvent that is not a function', () => {
    expect(make({ system: 42 })).toThrow(/option system: must be a string/)
    expect(make({ onEvent: 'log' })).toThrow(/option onEvent: must be a function/)
  })

  it.each([
    ['modelRetry', { modelRetry: { maxAttempts: 3 } }, /list retry\(\{ maxAttempts: 3 \}\) from @shallot\/retry in modelMiddleware/],
    ['modelBreaker', { modelBreaker: { threshold: 3 } }, /list circuitBreaker\(.*\) from @shallot\/circuit-breaker in modelMiddleware/],
    ['modelTimeoutMs', { limits: { modelTimeoutMs: 5000 } }, /list timeout\(\{ ms: 60_000 \}\) from @shallot\/timeout in modelMiddleware/],
  ])('refuses %s as an unknown option, naming the layer to list in modelMiddleware', (name, options, layer) => {
    expect(make(options)).toThrow(OptionsError)
    expect(make(options)).toThrow(`unknown option "${name}"`)
    expect(make(options)).toThrow(layer)
    // With layers too: the option would be silently ignored, and a deadline not applied.
    expect(make({ ...options, modelMiddleware: [] })).toThrow(layer)
  })

  it('refuses a model array, naming the fallback layer that gives a spare', () => {
    expect(make({ model: [ok, model('spare', [])] })).toThrow(
      /option model: must be one model adapter, got an array; .*fallback\(\{ models: \[b\] \}\) from @shallot\/fallback in modelMiddleware/,
    )
  })

  it('refuses any other unknown option rather than ignoring it, with the name it meant', () => {
    expect(make({ modelMidleware: [] })).toThrow(/createAgent\(\): unknown option "modelMidleware"; did you mean 'modelMiddleware'\?/)
    expect(make({ colour: 'red' })).toThrow(/unknown option "colour"; known options: model, system/)
  })
})
