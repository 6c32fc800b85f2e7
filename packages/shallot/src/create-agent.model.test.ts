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

const write = defineTool({
  name: 'write_file',
  description: 'Write a file',
  input: z.object({ path: z.string(), content: z.string() }),
  effect: 'write',
  execute: ({ path }) => `wrote ${path}`,
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

  it('rejects a system prompt that is not a string, and bad options of the default model stack', () => {
    expect(make({ system: 42 })).toThrow(/option system: must be a string/)
    expect(() => defaultModelMiddleware({ circuitBreaker: { cooldownMs: Number.NaN } })).toThrow(/cooldownMs/)
    expect(() => defaultModelMiddleware({ retry: { maxRetryAfterMs: -1 } })).toThrow(/maxRetryAfterMs/)
    expect(make({ onEvent: 'log' })).toThrow(/option onEvent: must be a function/)
  })
})
