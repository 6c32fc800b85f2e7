// One createAgent: `shallot`'s is `@shallot/agent`'s. A run without modelMiddleware asks its model once from
// either import path; the default model stack is what `modelMiddleware: defaultModelMiddleware()` lists, and
// the options that once configured it (modelRetry, modelBreaker, limits.modelTimeoutMs, model: [a, b]) are
// refused as unknown, naming the layer that does each.
import { createAgent as createAgentFromAgent } from '@shallot/agent'
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import {
  type AgentEvent,
  type AgentOptions,
  consecutive,
  createAgent,
  defaultModelMiddleware,
  fallback,
  type ModelAdapter,
  type ModelResponse,
  OptionsError,
  ToolError,
} from './index.js'

type Step = ModelResponse | Error | 'hang'

function scripted(clock: ManualClock, steps: readonly Step[], name?: string): ModelAdapter & { asked: number[] } {
  let i = 0
  const adapter = {
    ...(name === undefined ? {} : { name }),
    asked: [] as number[],
    generate() {
      adapter.asked.push(clock.now())
      const step = steps[Math.min(i++, steps.length - 1)] as Step
      if (step === 'hang') return new Promise<never>(() => {})
      return step instanceof Error ? Promise.reject(step) : Promise.resolve(step)
    },
  }
  return adapter
}

const overloaded = () =>
  new ToolError('overloaded', 'overloaded (529)', { category: 'transient', retryable: true, details: { status: 529 } })

async function settle(clock: ManualClock, options: AgentOptions, create = createAgent) {
  const run = create({ tools: [], clock, random: seededRandom(3), ...options }).run({ input: 'go' })
  let done = false
  run.then(
    () => (done = true),
    () => (done = true),
  )
  for (let i = 0; i < 100 && !done; i++) await clock.runAll()
  return run
}

describe('one createAgent, wherever it is imported from', () => {
  it('shallot re-exports @shallot/agent’s createAgent', () => {
    expect(createAgent).toBe(createAgentFromAgent)
  })

  it.each([
    ['shallot', createAgent],
    ['@shallot/agent', createAgentFromAgent],
  ])('from %s, a run without modelMiddleware asks the model once: no retry of a 503', async (_from, create) => {
    const clock = manualClock()
    const model = scripted(clock, [Object.assign(new Error('unavailable'), { status: 503 }), { text: 'never' }])
    const outcome = await settle(clock, { model }, create)
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' }, steps: 1 })
    expect(model.asked).toEqual([0])
  })

  it.each([
    ['shallot', createAgent],
    ['@shallot/agent', createAgentFromAgent],
  ])('from %s, a run without modelMiddleware puts no deadline on a model call', async (_from, create) => {
    const clock = manualClock()
    const model = scripted(clock, ['hang'])
    let settled = false
    void create({ model, tools: [], clock })
      .run({ input: 'go' })
      .finally(() => (settled = true))
    await clock.advance(3_600_000)
    expect(settled).toBe(false)
    expect(model.asked).toEqual([0])
  })

  it.each([
    ['modelRetry', { modelRetry: { maxAttempts: 3 } }, /unknown option "modelRetry"; list retry\(\{ maxAttempts: 3 \}\)/],
    ['modelBreaker', { modelBreaker: { threshold: 3 } }, /unknown option "modelBreaker"; list circuitBreaker\(/],
    ['limits.modelTimeoutMs', { limits: { modelTimeoutMs: 5_000 } }, /unknown option "modelTimeoutMs"; list timeout\(\{ ms: 60_000 \}\)/],
  ])('refuses %s as an unknown option, naming the layer to list in modelMiddleware', (_name, bad, message) => {
    const clock = manualClock()
    const make = () => createAgent({ model: scripted(clock, []), tools: [], ...(bad as object) } as AgentOptions)
    expect(make).toThrow(OptionsError)
    expect(make).toThrow(message)
  })

  it('refuses a model array, naming the fallback layer', () => {
    const clock = manualClock()
    const chain = [scripted(clock, [], 'a'), scripted(clock, [], 'b')] as unknown as ModelAdapter
    expect(() => createAgent({ model: chain, tools: [] })).toThrow(/option model: must be one model adapter, got an array; .*fallback\(/)
  })
})

describe('the default model stack, listed: modelMiddleware: defaultModelMiddleware()', () => {
  it('repeats a transient failure for the two minutes of its outage budget, then ends the run as model_failed', async () => {
    const clock = manualClock()
    const model = scripted(clock, [overloaded()])
    const outcome = await settle(clock, { model, modelMiddleware: defaultModelMiddleware() })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.asked.length).toBeGreaterThan(3)
    expect(model.asked.at(-1)).toBeLessThanOrEqual(120_000)
  })

  it('timeout.ms is each attempt’s deadline: a hang is cut at it and repeated', async () => {
    const clock = manualClock()
    const model = scripted(clock, ['hang', { text: 'ok' }])
    const outcome = await settle(clock, { model, modelMiddleware: defaultModelMiddleware({ timeout: { ms: 5_000 } }) })
    expect(outcome).toMatchObject({ status: 'completed', output: 'ok', steps: 2 })
    expect(model.asked[1]).toBeGreaterThanOrEqual(5_000)
    expect(model.asked[1]).toBeLessThan(5_000 + 250)
  })

  it('retry.maxAttempts sets the attempts; a transient failure past them ends the run as model_failed', async () => {
    const clock = manualClock()
    const model = scripted(clock, [overloaded()])
    const outcome = await settle(clock, { model, modelMiddleware: defaultModelMiddleware({ retry: { maxAttempts: 5, baseMs: 1 } }) })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.asked).toHaveLength(5)
  })

  it('with a fallback outermost, the breaker reaches each model: with threshold 5, one call’s three failed requests leave it closed', async () => {
    const clock = manualClock()
    const events: string[] = []
    const primary = scripted(clock, [overloaded()], 'primary')
    const spare = scripted(clock, [{ text: 'spare' }], 'spare')
    const agent = createAgent({
      model: primary,
      tools: [],
      clock,
      random: seededRandom(3),
      modelMiddleware: [
        fallback({ models: [spare] }),
        ...defaultModelMiddleware({ circuitBreaker: { policy: consecutive({ threshold: 5 }) } }),
      ],
      onEvent: (e: AgentEvent) => e.type === 'model.circuit' && events.push(`${e.model} ${e.from}>${e.to}`),
    })
    for (const input of ['one', 'two']) {
      const run = agent.run({ input })
      for (let i = 0; i < 50; i++) await clock.runAll()
      expect(await run).toMatchObject({ status: 'completed', output: 'spare' })
      // The default threshold, 3, would have opened it after the first run.
      if (input === 'one') expect(events).toEqual([])
    }
    expect(primary.asked).toHaveLength(6)
    expect(events).toEqual(['primary closed>open'])
  })

  it('with modelMiddleware: [] the model is asked once: no default retry around it', async () => {
    const clock = manualClock()
    const model = scripted(clock, [overloaded(), { text: 'never' }])
    const outcome = await settle(clock, { model, modelMiddleware: [] })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.asked).toHaveLength(1)
  })

  it('on the real clock: a model that never answers is given up at timeout.ms, its signal aborted with the timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    try {
      const signals: AbortSignal[] = []
      const model: ModelAdapter = {
        generate: ({ signal }) => {
          signals.push(signal)
          return new Promise(() => {})
        },
      }
      const modelMiddleware = defaultModelMiddleware({ timeout: { ms: 20 }, retry: { maxAttempts: 2, baseMs: 0, capMs: 0 } })
      const agent = createAgent({ model, tools: [], modelMiddleware })
      const outcome = agent.run({ input: 'hello' })
      await vi.advanceTimersByTimeAsync(19)
      expect(signals.map((signal) => signal.aborted)).toEqual([false])
      await vi.advanceTimersByTimeAsync(30)
      const settled = await outcome
      expect(settled).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
      expect(settled.status === 'stopped' && settled.error.message).toMatch(/did not answer within 20 ms/)
      expect(signals).toHaveLength(2)
      expect(signals.every((signal) => ToolError.is(signal.reason) && signal.reason.code === 'timeout')).toBe(true)
    } finally {
      vi.useRealTimers()
    }
  })

  it('creates no AbortController per model call for an adapter that never reads its signal, deadline and all', async () => {
    const Original = globalThis.AbortController
    let created = 0
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        created++
      }
    }
    try {
      const model = { generate: async () => ({ text: 'done', toolCalls: [] }) }
      const agent = createAgent({ model, tools: [], modelMiddleware: defaultModelMiddleware() })
      created = 0
      expect((await agent.run({ input: 'hello' })).status).toBe('completed')
      expect(created).toBe(0)
      // A run the caller can cancel: the retry layer follows the run's own signal (made real once per run), the
      // deadline's stays deferred.
      const caller = new Original()
      created = 0
      expect((await agent.run({ input: 'hello', signal: caller.signal })).status).toBe('completed')
      expect(created).toBeLessThanOrEqual(1)
    } finally {
      globalThis.AbortController = Original
    }
  })
})
