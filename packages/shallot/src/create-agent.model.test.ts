// The agent's model scenarios through the default model stack as a user lists it: modelMiddleware:
// defaultModelMiddleware(), with fallback({ models: [spare] }) outermost for a spare model. Each ends as the
// agent's own retry, breaker and chain once did.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type AgentEvent,
  type Clock,
  createAgent,
  defaultModelMiddleware,
  defineTool,
  fallback,
  LoopError,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  memoryCheckpoints,
  OptionsError,
  ToolError,
} from './index.js'

/** Virtual time: a sleep returns at once and moves `now` by its length; `sleeps` records each wait. */
const POLICY = new Set(['model.retry', 'model.fallback', 'model.circuit'])

function virtualClock(): Clock & { sleeps: number[]; advance(ms: number): void } {
  let now = 0
  const sleeps: number[] = []
  return {
    now: () => now,
    sleeps,
    advance(ms) {
      now += ms
    },
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason
      sleeps.push(ms)
      now += ms
    },
    timer: () => () => {},
  }
}

/** A spare model as a layer: the fallback outermost, then the default stack (its breaker keyed by each model). */
const withSpare = (spare: ModelAdapter) => [fallback({ models: [spare] }), ...defaultModelMiddleware()]

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
const rateLimited = (retryAfterMs?: number) =>
  new ToolError('rate_limited', 'the model provider is rate limiting (429 rate_limit_exceeded): slow down', {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    details: { status: 429, code: 'rate_limit_exceeded', providerMessage: 'slow down' },
  })
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

describe('model-call retries', () => {
  it("never re-sends before the provider's Retry-After; the backoff's draw is waited when longer, within capMs", async () => {
    const clock = virtualClock()
    const m = model(undefined, [rateLimited(2000), rateLimited(2000), { text: 'ok' }], clock)
    const outcome = await createAgent({
      model: m,
      tools: [write],
      clock,
      random: () => 0.999,
      modelMiddleware: defaultModelMiddleware(),
    }).run({ input: 'x' })
    expect(outcome.status).toBe('completed')
    const gaps = m.requests.slice(1).map((r, i) => r.at - (m.requests[i] as { at: number }).at)
    expect(gaps).toEqual(clock.sleeps)
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(2000)
    // max(the full-jitter draw, Retry-After) (decision 510): draws of 249 and 499 ms are under the 2 s floor.
    expect(clock.sleeps).toEqual([2000, 2000])
  })

  it('names the real cause in the report when the retries are spent (a two-minute outage budget of 429s)', async () => {
    const clock = virtualClock()
    const m = model(undefined, [rateLimited(2000)], clock)
    const outcome = await createAgent({ model: m, tools: [write], clock, random: () => 0, modelMiddleware: defaultModelMiddleware() }).run({
      input: 'x',
    })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('model_failed')
    expect(outcome.report.why).toBe('the model call failed: 429 rate limited by the provider (slow down), Retry-After 2 s')
    expect(outcome.report.text).not.toMatch(/did not answer within/)
    expect(m.requests.length).toBeGreaterThan(3)
    expect(m.requests.length).toBeLessThanOrEqual(21)
  })

  it('gives up at once on a Retry-After past retry.maxRetryAfterMs rather than re-send early', async () => {
    const clock = virtualClock()
    const m = model(undefined, [rateLimited(90_000), { text: 'never' }], clock)
    const modelMiddleware = defaultModelMiddleware({ retry: { maxRetryAfterMs: 10_000 } })
    const outcome = await createAgent({ model: m, tools: [write], clock, modelMiddleware }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(m.requests).toHaveLength(1)
    expect(clock.sleeps).toEqual([])
    expect(outcome.status === 'stopped' && outcome.report.why).toMatch(/Retry-After 90 s/)
  })

  it.each([
    ['context_exceeded', "the request does not fit the model's context window (400 context_length_exceeded): too long"],
    ['user_input_required', "the model provider's quota or billing is exhausted (429 insufficient_quota): pay up"],
    ['model_failed', 'the model provider refused the request (400 invalid_request_error): bad field'],
  ] as const)('a LoopError %s from the adapter ends the run at once with its reason', async (kind, message) => {
    const m = model(undefined, [new LoopError(kind, message, { details: { status: 400, providerMessage: 'x' } }), { text: 'never' }])
    const outcome = await createAgent({ model: m, tools: [write], modelMiddleware: defaultModelMiddleware() }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind, message } })
    expect(m.requests).toHaveLength(1)
    expect(outcome.status === 'stopped' && outcome.report.why).toContain(message)
  })
})

describe('a fallback chain', () => {
  it('skips a failing primary once its circuit opens; the run completes on the secondary, with events', async () => {
    const clock = virtualClock()
    const events: AgentEvent[] = []
    const primary = model('primary', [overloaded()], clock)
    const secondary = model('secondary', [call('c1'), { text: 'done on secondary' }], clock)
    const agent = createAgent({
      model: primary,
      modelMiddleware: withSpare(secondary),
      tools: [write],
      clock,
      random: () => 0,
      // The policy's events only: runs and model attempts are asserted in agent-events.test.ts.
      onEvent: (e) => POLICY.has(e.type) && events.push(e),
    })
    const outcome = await agent.run({ input: 'x', runId: 'r1' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'done on secondary' })
    // Three failed attempts open the primary's circuit; the second turn skips it.
    expect(primary.requests).toHaveLength(3)
    expect(secondary.requests).toHaveLength(2)
    expect(events.map((e) => e.type)).toEqual(['model.retry', 'model.retry', 'model.circuit', 'model.fallback', 'model.fallback'])
    expect(events[2]).toMatchObject({
      type: 'model.circuit',
      model: 'primary',
      from: 'closed',
      to: 'open',
      reason: '3 consecutive failures',
    })
    expect(events[3]).toMatchObject({
      from: 'primary',
      to: 'secondary',
      reason: expect.stringMatching(/^primary: 529 the provider is overloaded/),
    })
    expect(events[4]).toMatchObject({ from: 'primary', to: 'secondary', reason: expect.stringMatching(/skipped: circuit open/) })

    // After the cooldown one probe goes to the primary; its success closes the circuit.
    clock.advance(30_000)
    const healed = model('primary', [{ text: 'back' }])
    primary.generate = healed.generate
    expect(await agent.run({ input: 'y' })).toMatchObject({ status: 'completed', output: 'back' })
    expect(events.slice(5).map((e) => e.type === 'model.circuit' && `${e.from}>${e.to}`)).toEqual(['open>half-open', 'half-open>closed'])
  })

  it('ends as fallback_exhausted, checkpointed, with a report naming each model and its last error', async () => {
    const clock = virtualClock()
    const checkpoints = memoryCheckpoints()
    const primary = model('gpt-4o-mini', [overloaded()], clock)
    const secondary = model('claude-sonnet-4-5', [overloaded()], clock)
    const agent = createAgent({
      model: primary,
      modelMiddleware: withSpare(secondary),
      tools: [write],
      clock,
      random: () => 0,
      checkpoints,
    })
    const outcome = await agent.run({ input: 'x', runId: 'both-down' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('fallback_exhausted')
    expect(outcome.error.message).toBe('every model of the chain was unavailable (gpt-4o-mini, claude-sonnet-4-5)')
    // The primary gets its 3 attempts (a spare waits); the last model of the chain rides out its outage's two minutes.
    const ridden = secondary.requests.length
    expect(ridden).toBeGreaterThan(3)
    expect(ridden).toBeLessThanOrEqual(21)
    expect(outcome.error.details.models).toEqual([
      { model: 'gpt-4o-mini', attempts: 3, circuit: 'open', error: '529 the provider is overloaded (Overloaded); circuit open' },
      { model: 'claude-sonnet-4-5', attempts: ridden, circuit: 'open', error: '529 the provider is overloaded (Overloaded); circuit open' },
    ])
    expect(outcome.report.why).toBe(
      'every model in the fallback chain was unavailable: gpt-4o-mini: 529 the provider is overloaded (Overloaded); circuit open; ' +
        'claude-sonnet-4-5: 529 the provider is overloaded (Overloaded); circuit open',
    )
    expect(outcome.report.nextSteps).toContain("agent.resume('both-down')")
    expect((await checkpoints.load('both-down'))?.status).toBe('stopped')
    // The primary's cooldown ran out while the spare's outage was ridden out: the next run probes it; the spare's
    // circuit, open since, skips it without a request.
    const again = await agent.run({ input: 'y' })
    expect(again).toMatchObject({ status: 'stopped', error: { kind: 'fallback_exhausted' } })
    expect(secondary.requests).toHaveLength(ridden)
    expect(primary.requests).toHaveLength(6)
  })

  it('a LoopError of the primary ends the run; it does not fall back', async () => {
    const primary = model('a', [new LoopError('context_exceeded', 'too long')])
    const secondary = model('b', [{ text: 'never' }])
    const outcome = await createAgent({ model: primary, modelMiddleware: withSpare(secondary), tools: [write] }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'context_exceeded' } })
    expect(secondary.requests).toHaveLength(0)
  })

  it('a throwing onEvent listener changes nothing', async () => {
    const primary = model('a', [overloaded()])
    const secondary = model('b', [{ text: 'fine' }])
    const agent = createAgent({
      model: primary,
      modelMiddleware: withSpare(secondary),
      tools: [write],
      clock: virtualClock(),
      onEvent: () => {
        throw new Error('listener down')
      },
    })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'completed', output: 'fine' })
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

  it('limits.maxCostUsd prices each call by the model that answered it', async () => {
    const primary = model('cheap', [overloaded()])
    const secondary = model('dear', [
      { ...call('c1'), ...usage(1_000_000, 0) }, // $3
      { ...call('c2'), ...usage(0, 200_000) }, // $3 more: past $5
    ])
    const outcome = await createAgent({
      model: primary,
      modelMiddleware: withSpare(secondary),
      tools: [write],
      clock: virtualClock(),
      limits: { maxCostUsd: 5 },
      prices: { cheap: { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 }, dear: { inputPerMTokUsd: 3, outputPerMTokUsd: 15 } },
    }).run({ input: 'x' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      error: { kind: 'budget_exhausted', message: 'cost budget exhausted: $6.00 spent, limits.maxCostUsd is $5.00' },
      usage: { inputTokens: 1_000_000, outputTokens: 200_000, costUsd: 6 },
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
      modelMiddleware: defaultModelMiddleware(),
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

  it('treats a generate() that throws before returning a promise like one that rejects: retried when transient', async () => {
    const clock = virtualClock()
    let calls = 0
    const events: string[] = []
    const agent = createAgent({
      model: {
        generate() {
          calls++
          if (calls === 1) throw overloaded()
          return Promise.resolve({ text: `answered on attempt ${calls}` })
        },
      },
      tools: [write],
      clock,
      random: () => 0,
      modelMiddleware: defaultModelMiddleware(),
      onEvent: (event) => events.push(event.type === 'model.call' ? `model.call ${event.attempt} ${event.code ?? 'ok'}` : event.type),
    })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'completed', output: 'answered on attempt 2', steps: 2 })
    expect(events).toEqual(['run.started', 'model.call 1 overloaded', 'model.retry', 'model.call 2 ok', 'run.finished'])
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

  it('a cancelled half-open probe frees its slot: the next run probes the primary again', async () => {
    const clock = virtualClock()
    let mode: 'fail' | 'hang' | 'ok' = 'fail'
    const primary: ModelAdapter & { calls: number } = {
      name: 'primary',
      calls: 0,
      generate({ signal }) {
        primary.calls++
        if (mode === 'fail') return Promise.reject(overloaded())
        if (mode === 'ok') return Promise.resolve({ text: 'primary is back' })
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
      },
    }
    const secondary = model('secondary', [{ text: 'secondary' }])
    const agent = createAgent({ model: primary, modelMiddleware: withSpare(secondary), tools: [write], clock, random: () => 0 })
    expect(await agent.run({ input: 'open it' })).toMatchObject({ status: 'completed', output: 'secondary' })
    clock.advance(30_000)
    mode = 'hang'
    const controller = new AbortController()
    const probing = agent.run({ input: 'probe', signal: controller.signal })
    await new Promise((resolve) => setImmediate(resolve))
    controller.abort(new Error('user gave up'))
    expect(await probing).toMatchObject({ status: 'stopped', error: { kind: 'cancelled' } })
    mode = 'ok'
    expect(await agent.run({ input: 'again' })).toMatchObject({ status: 'completed', output: 'primary is back' })
    expect(primary.calls).toBe(5)
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

  it.each([
    ['timeout', 'ms'],
    ['retry', 'capMs'],
    ['retry', 'maxRetryAfterMs'],
  ])('the default model stack rejects %s.%s past what a timer can hold, instead of a deadline that fires at once', (layer, key) => {
    const stack = (ms: number) => () => defaultModelMiddleware({ [layer]: { [key]: ms } })
    expect(stack(2 ** 31)).toThrow(OptionsError)
    expect(stack(2 ** 31)).toThrow(new RegExp(`option ${key}: .*2147483647`))
    expect(stack(2 ** 31 - 1)).not.toThrow()
  })

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

  it('rejects a system prompt that is not a string, and bad options of the default model stack', () => {
    expect(make({ system: 42 })).toThrow(/option system: must be a string/)
    expect(() => defaultModelMiddleware({ circuitBreaker: { cooldownMs: Number.NaN } })).toThrow(/cooldownMs/)
    expect(() => defaultModelMiddleware({ retry: { maxRetryAfterMs: -1 } })).toThrow(/maxRetryAfterMs/)
    expect(make({ onEvent: 'log' })).toThrow(/option onEvent: must be a function/)
  })
})
