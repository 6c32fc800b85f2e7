import { type AgentEvent, type AgentOptions, createAgent } from '@shallot/agent'
import {
  createStack,
  defineTool,
  LoopError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { timeout, timeoutDefinition } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { memoryRetryBudget, retry, retryDefinition } from './index.js'

type Step = ModelResponse | Error | 'hang' | 'throw-sync-overloaded'

/** A model on `clock` that plays `steps` in order (the last one again and again), recording when each request came. */
function scripted(clock: ManualClock, steps: readonly Step[]) {
  const requests: Array<{ at: number; signal: AbortSignal }> = []
  let i = 0
  const adapter: ModelAdapter = {
    generate(request: ModelRequest) {
      requests.push({ at: clock.now(), signal: request.signal })
      const step = steps[Math.min(i++, steps.length - 1)] as Step
      if (step === 'throw-sync-overloaded') throw overloaded()
      if (step === 'hang') return new Promise<never>(() => {})
      return step instanceof Error ? Promise.reject(step) : Promise.resolve(step)
    },
  }
  return { adapter, requests }
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})
const done = (text: string): ModelResponse => ({ text, toolCalls: [] })
const rateLimited = (retryAfterMs?: number) =>
  new ToolError('rate_limited', 'the model provider is rate limiting (429 rate_limit_exceeded): slow down', {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    details: { status: 429, providerMessage: 'slow down' },
  })
const overloaded = () =>
  new ToolError('overloaded', 'the model provider is overloaded (529 overloaded_error)', { category: 'transient', retryable: true })
/** What a provider SDK throws: no ToolError, a status, classified by core's one transient list. */
const status = (code: number, message: string) => Object.assign(new Error(message), { status: code })

/** The default model stack's retry figures (`defaultModelMiddleware()`), as the layer's policy. */
const POLICY = { maxAttempts: 3, baseMs: 250, capMs: 4000, maxRetryAfterMs: 60_000 } as const

/** Runs the agent on `clock` to its end: time moves only when every promise has settled. */
async function runOn(clock: ManualClock, options: AgentOptions, signal?: AbortSignal) {
  const events: AgentEvent[] = []
  const agent = createAgent({ ...options, clock, onEvent: (event) => events.push(event) })
  let settled = false
  const run = agent.run(signal === undefined ? { input: 'go' } : { input: 'go', signal })
  run.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  for (let i = 0; i < 100 && !settled; i++) await clock.runAll()
  return { outcome: await run, events }
}

/** The events a reader compares across paths: who was asked, how it ended, and when a retry came. */
function story(events: readonly AgentEvent[]): string[] {
  return events.flatMap((e) =>
    e.type === 'model.call' ? [`model.call ${e.attempt} ${e.code ?? 'ok'}`] : e.type === 'model.retry' ? [`model.retry ${e.attempt}`] : [],
  )
}

interface Scenario {
  readonly name: string
  readonly steps: readonly Step[]
  readonly limits?: AgentOptions['limits']
  /** Model deadline: the timeout layer's ms. */
  readonly deadlineMs?: number
  readonly maxRetryAfterMs?: number
  readonly expect: { status: string; kind?: string; output?: string; requests: number; steps: number; story: string[] }
  /** The least wait between two requests. */
  readonly floorMs?: number
}

const SCENARIOS: Scenario[] = [
  {
    name: '429 with Retry-After 2 s, then an answer',
    steps: [rateLimited(2000), done('ok')],
    floorMs: 2000,
    expect: {
      status: 'completed',
      output: 'ok',
      requests: 2,
      steps: 2,
      story: ['model.call 1 rate_limited', 'model.retry 1', 'model.call 2 ok'],
    },
  },
  {
    name: 'two 503s from the SDK, then an answer',
    steps: [status(503, 'Service Unavailable'), status(503, 'Service Unavailable'), done('ok')],
    expect: {
      status: 'completed',
      output: 'ok',
      requests: 3,
      steps: 3,
      story: ['model.call 1 503', 'model.retry 1', 'model.call 2 503', 'model.retry 2', 'model.call 3 ok'],
    },
  },
  {
    name: 'a hang cut at the deadline, then an answer',
    steps: ['hang', done('ok')],
    deadlineMs: 1000,
    floorMs: 1000,
    expect: {
      status: 'completed',
      output: 'ok',
      requests: 2,
      steps: 2,
      story: ['model.call 1 timeout', 'model.retry 1', 'model.call 2 ok'],
    },
  },
  {
    name: 'a generate() that throws an overload before returning a promise',
    steps: ['throw-sync-overloaded', done('ok')],
    expect: {
      status: 'completed',
      output: 'ok',
      requests: 2,
      steps: 2,
      story: ['model.call 1 overloaded', 'model.retry 1', 'model.call 2 ok'],
    },
  },
  {
    name: 'a 400 is not transient: one request',
    steps: [status(400, 'bad field'), done('never')],
    expect: { status: 'stopped', kind: 'model_failed', requests: 1, steps: 1, story: ['model.call 1 400'] },
  },
  {
    name: 'retries spent on 429s',
    steps: [rateLimited(2000)],
    expect: {
      status: 'stopped',
      kind: 'model_failed',
      requests: 3,
      steps: 3,
      story: ['model.call 1 rate_limited', 'model.retry 1', 'model.call 2 rate_limited', 'model.retry 2', 'model.call 3 rate_limited'],
    },
  },
  {
    name: 'a Retry-After past maxRetryAfterMs gives up at once',
    steps: [rateLimited(90_000), done('never')],
    maxRetryAfterMs: 10_000,
    expect: { status: 'stopped', kind: 'model_failed', requests: 1, steps: 1, story: ['model.call 1 rate_limited'] },
  },
  {
    name: "the run's step budget ends the retries",
    steps: [status(503, 'Service Unavailable')],
    limits: { maxSteps: 2 },
    expect: {
      status: 'stopped',
      kind: 'budget_exhausted',
      requests: 2,
      steps: 2,
      story: ['model.call 1 503', 'model.retry 1', 'model.call 2 503', 'model.retry 2'],
    },
  },
  {
    name: 'a LoopError from the adapter ends the run: no retry',
    steps: [new LoopError('context_exceeded', 'too long'), done('never')],
    expect: { status: 'stopped', kind: 'context_exceeded', requests: 1, steps: 1, story: ['model.call 1 context_exceeded'] },
  },
]

/**
 * How the scenarios ask the model: the retry and timeout layers' model handlers. Each scenario's expectation is
 * what core's own retry and deadline did; that path is gone: createAgent asks through these layers or not at all.
 */
const PATHS = {
  layers: (s: Scenario): Partial<AgentOptions> => ({
    ...(s.limits === undefined ? {} : { limits: s.limits }),
    modelMiddleware: [
      retryDefinition.buildModel({ ...POLICY, maxRetryAfterMs: s.maxRetryAfterMs ?? POLICY.maxRetryAfterMs }),
      timeoutDefinition.buildModel(s.deadlineMs === undefined ? {} : { ms: s.deadlineMs }),
    ],
  }),
}

describe("core's model-retry scenarios run through the layers and end as core's own retry did", () => {
  describe.each(Object.entries(PATHS))('%s path', (_path, optionsFor) => {
    it.each(SCENARIOS)('$name', async (scenario) => {
      const clock = manualClock()
      const model = scripted(clock, scenario.steps)
      const { outcome, events } = await runOn(clock, { model: model.adapter, tools: [echo], random: () => 0.5, ...optionsFor(scenario) })
      expect(outcome.status).toBe(scenario.expect.status)
      expect(outcome.steps).toBe(scenario.expect.steps)
      if (outcome.status === 'completed') expect(outcome.output).toBe(scenario.expect.output)
      if (outcome.status === 'stopped') expect(outcome.error.kind).toBe(scenario.expect.kind)
      expect(model.requests).toHaveLength(scenario.expect.requests)
      expect(story(events)).toEqual(scenario.expect.story)
      const gaps = model.requests.slice(1).map((r, i) => r.at - (model.requests[i] as { at: number }).at)
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(scenario.floorMs ?? 0)
      // Nothing sleeps or waits on the clock once the run ended: no deadline or backoff left behind.
      expect(clock.pending).toBe(0)
    })
  })

  it('name the failure in core’s words when the retries are spent', async () => {
    const whys: string[] = []
    for (const optionsFor of Object.values(PATHS)) {
      const clock = manualClock()
      const scenario = SCENARIOS.find((s) => s.name === 'retries spent on 429s') as Scenario
      const { outcome } = await runOn(clock, { model: scripted(clock, scenario.steps).adapter, tools: [echo], ...optionsFor(scenario) })
      if (outcome.status === 'stopped') whys.push(outcome.report.why)
    }
    expect(whys).toEqual(['the model call failed: 429 rate limited by the provider (slow down), Retry-After 2 s'])
  })
})

describe('retry, model calls: the Retry-After rule (decision 510)', () => {
  it('waits max(backoff, Retry-After): the pushback exactly when the draw is shorter, with no jitter added above it', async () => {
    const clock = manualClock()
    const model = scripted(clock, [rateLimited(2000), rateLimited(2000), done('ok')])
    const { outcome, events } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      random: () => 0.999,
      modelMiddleware: retry(POLICY),
    })
    expect(outcome.status).toBe('completed')
    expect(events.flatMap((e) => (e.type === 'model.retry' ? [e.delayMs] : []))).toEqual([2000, 2000])
    expect(model.requests.map((r) => r.at)).toEqual([0, 2000, 4000])
  })

  it('waits the backoff when it is longer than the pushback', async () => {
    const clock = manualClock()
    const model = scripted(clock, [rateLimited(100), done('ok')])
    const { events } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      random: () => 0.5,
      modelMiddleware: retry({ baseMs: 1000, capMs: 4000 }),
    })
    expect(events.flatMap((e) => (e.type === 'model.retry' ? [e.delayMs] : []))).toEqual([500])
    expect(model.requests.map((r) => r.at)).toEqual([0, 500])
  })

  it('reads a tool policy the same way: maxRetryAfterMs lets a tool wait a pushback past capMs', async () => {
    const clock = manualClock()
    let calls = 0
    const flaky = defineTool({
      name: 'flaky',
      description: 'Fails once with a 10 s pushback',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        calls++
        if (calls === 1) throw rateLimited(10_000)
        return 'ok'
      },
    })
    const stack = createStack({
      tools: [flaky],
      middleware: [retry({ capMs: 8000, maxRetryAfterMs: 20_000, retryBudget: false })],
      clock,
      random: () => 0,
    })
    const dispatched = stack.dispatch({ id: 'c1', name: 'flaky', args: {} })
    for (let i = 0; i < 5; i++) await clock.runAll()
    expect(await dispatched).toMatchObject({ ok: true })
    expect(calls).toBe(2)
    expect(clock.now()).toBe(10_000)
  })
})

describe('retry, model calls: the run around it', () => {
  it('ends promptly when the run is cancelled during a backoff, leaving no timer behind', async () => {
    const clock = manualClock()
    const model = scripted(clock, [rateLimited(30_000), done('never')])
    const controller = new AbortController()
    const agent = createAgent({ model: model.adapter, tools: [echo], clock, modelMiddleware: [retry(), timeout()] })
    const run = agent.run({ input: 'go', signal: controller.signal })
    await clock.advance(1000)
    expect(clock.pending).toBe(1)
    controller.abort(new Error('user pressed stop'))
    const outcome = await run
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'cancelled' } })
    expect(clock.now()).toBe(1000)
    expect(clock.pending).toBe(0)
    expect(model.requests).toHaveLength(1)
  })

  it('passes a LoopError through as the same object, without a retry', async () => {
    const clock = manualClock()
    const thrown = new LoopError('user_input_required', 'the quota is exhausted')
    const model = scripted(clock, [thrown, done('never')])
    const { outcome } = await runOn(clock, { model: model.adapter, tools: [echo], modelMiddleware: [retry(), timeout()] })
    expect(outcome.status === 'stopped' && outcome.error).toBe(thrown)
    expect(model.requests).toHaveLength(1)
  })

  it('bumps ctx.attempt for the layers inside and the model.call events', async () => {
    const clock = manualClock()
    const seen: number[] = []
    const spy: ModelMiddleware = async (ctx, next) => {
      seen.push(ctx.attempt)
      await next()
    }
    const model = scripted(clock, [status(502, 'Bad Gateway'), status(504, 'Gateway Timeout'), done('ok')])
    const { events } = await runOn(clock, { model: model.adapter, tools: [echo], modelMiddleware: [retry(), spy] })
    expect(seen).toEqual([1, 2, 3])
    expect(events.flatMap((e) => (e.type === 'model.call' ? [e.attempt] : []))).toEqual([1, 2, 3])
  })

  it('stops retrying when the token bucket is empty, and perCode caps a code', async () => {
    const clock = manualClock()
    const starved = scripted(clock, [rateLimited(), done('never')])
    const first = await runOn(clock, {
      model: starved.adapter,
      tools: [echo],
      modelMiddleware: retry({ retryBudget: memoryRetryBudget({ maxTokens: 4 }) }),
    })
    expect(first.outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(starved.requests).toHaveLength(1)
    const capped = scripted(clock, [rateLimited()])
    await runOn(clock, {
      model: capped.adapter,
      tools: [echo],
      modelMiddleware: retry({ maxAttempts: 5, perCode: { rate_limited: { maxAttempts: 2 } } }),
    })
    expect(capped.requests).toHaveLength(2)
  })

  it.each([
    [
      'throws',
      () => ({
        tryTake: () => {
          throw new Error('redis down')
        },
        refill: () => {},
        available: () => 0,
      }),
    ],
    ['rejects', () => ({ tryTake: () => Promise.reject(new Error('redis down')), refill: () => {}, available: () => 0 })],
    ['answers garbage', () => ({ tryTake: () => 'yes' as never, refill: () => {}, available: () => 0 })],
  ])('reads a token bucket that %s as no retry (the safe side), and says so in the log', async (label, store) => {
    const clock = manualClock()
    const warnings: string[] = []
    const log = { debug() {}, info() {}, error() {}, warn: (_fields: unknown, message: string) => void warnings.push(message) }
    const model = scripted(clock, [rateLimited(), done('never')])
    const { outcome } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      logger: log as never,
      modelMiddleware: retry({ retryBudget: store() }),
    })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.requests).toHaveLength(1)
    if (label !== 'answers garbage') expect(warnings).toContain('retry budget store failed; not retrying the model call')
  })

  it('serves parallel runs of one agent, each with its own attempts', async () => {
    const clock = manualClock()
    let calls = 0
    const adapter: ModelAdapter = {
      generate: () => (++calls % 2 === 1 ? Promise.reject(overloaded()) : Promise.resolve(done(`answer ${calls}`))),
    }
    const agent = createAgent({ model: adapter, tools: [echo], clock, modelMiddleware: retry() })
    const runs = Promise.all([agent.run({ input: 'a' }), agent.run({ input: 'b' }), agent.run({ input: 'c' })])
    for (let i = 0; i < 10; i++) await clock.runAll()
    const outcomes = await runs
    expect(outcomes.map((o) => o.status)).toEqual(['completed', 'completed', 'completed'])
    expect(calls).toBe(6)
  })

  it.each([
    [{ maxAttempts: 0 }, 'maxAttempts'],
    [{ backoff: 'fulljitter' }, 'backoff'],
    [{ maxRetryAfterMs: Number.NaN }, 'maxRetryAfterMs'],
    [{ retryBudget: { tryTake: 1 } }, 'retryBudget'],
    [{ __proto__: { maxAttempts: 99 }, bogus: 1 }, 'bogus'],
  ])('refuses %j naming the option', (options, named) => {
    expect(() => retry(options as never)).toThrow(OptionsError)
    expect(() => retry(options as never)).toThrow(named)
  })
})

describe('timeout, model calls: the per-attempt model deadline', () => {
  it('cuts a model that ignores its signal, aborts the signal it was handed with the timeout, and gives the outer layers theirs back', async () => {
    const clock = manualClock()
    const model = scripted(clock, ['hang', done('ok')])
    const signals: AbortSignal[] = []
    const outer: ModelMiddleware = async (ctx, next) => {
      const mine = ctx.signal
      await next().finally(() => signals.push(ctx.signal === mine ? mine : ctx.signal))
    }
    const { outcome } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      modelMiddleware: [retry(), outer, timeout({ ms: 5000 })],
    })
    expect(outcome).toMatchObject({ status: 'completed', output: 'ok' })
    expect(model.requests.map((r) => r.at)).toEqual([0, expect.any(Number)])
    expect(model.requests[0]?.signal.reason).toMatchObject({ code: 'timeout', message: 'the model did not answer within 5000 ms' })
    for (const signal of signals) expect(signal.aborted).toBe(false)
  })

  it('gives each model its own deadline by name, else ms', async () => {
    const clock = manualClock()
    const slow = { ...scripted(clock, ['hang']).adapter, name: 'slow-model' }
    const { outcome } = await runOn(clock, {
      model: slow,
      tools: [echo],
      modelMiddleware: timeout({ ms: 1000, models: { 'slow-model': 7000 } }),
    })
    expect(outcome).toMatchObject({
      status: 'stopped',
      error: { kind: 'model_failed', details: { failure: 'the model did not answer within 7000 ms' } },
    })
    expect(clock.now()).toBe(7000)
  })

  it('outside the retry layer, is one deadline for the whole call, retries included', async () => {
    const clock = manualClock()
    const model = scripted(clock, [status(503, 'Service Unavailable')])
    const { outcome } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      modelMiddleware: [timeout({ ms: 1000 }), retry({ maxAttempts: 6, baseMs: 400, capMs: 400, backoff: 'constant' })],
    })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.requests.map((r) => r.at)).toEqual([0, 400, 800])
    expect(clock.now()).toBe(1000)
    expect(clock.pending).toBe(0)
  })

  it('the shorter of two deadlines wins (an outer layer’s and an inner one’s)', async () => {
    const clock = manualClock()
    const { outcome } = await runOn(clock, {
      model: scripted(clock, ['hang']).adapter,
      tools: [echo],
      modelMiddleware: [timeout({ ms: 9000 }), timeout({ ms: 2000 })],
    })
    expect(outcome).toMatchObject({ status: 'stopped', error: { details: { failure: 'the model did not answer within 2000 ms' } } })
    expect(clock.now()).toBe(2000)
  })

  it.each([[{ ms: -1 }], [{ ms: 2 ** 31 }], [{ models: { 'gpt-x': 'soon' } }], [{ model: 5 }]])(
    'refuses %j naming the option',
    (options) => {
      expect(() => timeout(options as never)).toThrow(OptionsError)
    },
  )
})

describe('retry, model calls: what model.retry tells a person waiting', () => {
  const retries = (events: readonly AgentEvent[]) => events.filter((e) => e.type === 'model.retry') as unknown as Record<string, unknown>[]

  it('names the attempts the policy allows for the code, the Retry-After and the HTTP status of each failure', async () => {
    const clock = manualClock()
    const model = scripted(clock, [rateLimited(2000), status(503, 'Service Unavailable'), done('ok')])
    const { outcome, events } = await runOn(clock, {
      model: model.adapter,
      tools: [echo],
      random: () => 0.5,
      modelMiddleware: retry({ ...POLICY, perCode: { rate_limited: { maxAttempts: 5 } } }),
    })
    expect(outcome.status).toBe('completed')
    const [first, second] = retries(events)
    expect(first).toMatchObject({ attempt: 1, maxAttempts: 5, delayMs: 2000, retryAfterMs: 2000, status: 429 })
    expect(second).toMatchObject({ attempt: 2, maxAttempts: 3, status: 503 })
    expect(second).not.toHaveProperty('retryAfterMs')
  })

  it.each([
    ['NaN', Number.NaN],
    ['a string', '503'],
    ['out of range', 1e9],
    ['a fraction', 503.5],
  ])('leaves status out when the failure names %s as its status', async (_name, bad) => {
    const clock = manualClock()
    const odd = new ToolError('upstream_error', 'odd', { category: 'transient', retryable: true, details: { status: bad } })
    const { events } = await runOn(clock, {
      model: scripted(clock, [odd, done('ok')]).adapter,
      tools: [echo],
      modelMiddleware: retry(POLICY),
    })
    const [only] = retries(events)
    expect(only).toMatchObject({ attempt: 1, maxAttempts: 3 })
    expect(only).not.toHaveProperty('status')
    expect(only).not.toHaveProperty('retryAfterMs')
  })
})
