// shallot's createAgent: the default model stack when no modelMiddleware is given, and the old options as its sugar
// (decision 500, step 3). Core's own model scenarios run through it in create-agent.model.test.ts.
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { type AgentEvent, type AgentOptions, createAgent, type ModelAdapter, type ModelResponse, OptionsError, ToolError } from './index.js'

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

async function settle(clock: ManualClock, options: AgentOptions<readonly ModelAdapter[] | ModelAdapter>) {
  const run = createAgent({ tools: [], clock, random: seededRandom(3), ...options }).run({ input: 'go' })
  let done = false
  run.then(
    () => (done = true),
    () => (done = true),
  )
  for (let i = 0; i < 100 && !done; i++) await clock.runAll()
  return run
}

describe("shallot's createAgent: the default model stack and its sugar", () => {
  it('limits.modelTimeoutMs is each attempt’s deadline: a hang is cut at it and repeated', async () => {
    const clock = manualClock()
    const model = scripted(clock, ['hang', { text: 'ok' }])
    const outcome = await settle(clock, { model, limits: { modelTimeoutMs: 5_000 } })
    expect(outcome).toMatchObject({ status: 'completed', output: 'ok', steps: 2 })
    expect(model.asked[1]).toBeGreaterThanOrEqual(5_000)
    expect(model.asked[1]).toBeLessThan(5_000 + 250)
  })

  it('modelRetry sets the attempts; a transient failure past them ends the run as model_failed', async () => {
    const clock = manualClock()
    const model = scripted(clock, [overloaded()])
    const outcome = await settle(clock, { model, modelRetry: { maxAttempts: 5, baseMs: 1 } })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.asked).toHaveLength(5)
  })

  it('modelBreaker reaches each model of a chain: with threshold 5, one call’s three failed requests leave it closed', async () => {
    const clock = manualClock()
    const events: string[] = []
    const primary = scripted(clock, [overloaded()], 'primary')
    const spare = scripted(clock, [{ text: 'spare' }], 'spare')
    const agent = createAgent({
      model: [primary, spare],
      tools: [],
      clock,
      random: seededRandom(3),
      modelBreaker: { threshold: 5 },
      onEvent: (e: AgentEvent) => e.type === 'model.circuit' && events.push(`${e.model} ${e.from}>${e.to}`),
    })
    for (const input of ['one', 'two']) {
      const run = agent.run({ input })
      for (let i = 0; i < 50; i++) await clock.runAll()
      expect(await run).toMatchObject({ status: 'completed', output: 'spare' })
      // Core's default, 3, would have opened it after the first run.
      if (input === 'one') expect(events).toEqual([])
    }
    expect(primary.asked).toHaveLength(6)
    expect(events).toEqual(['primary closed>open'])
  })

  it('with modelMiddleware the given layers decide alone: no default retry around them', async () => {
    const clock = manualClock()
    const model = scripted(clock, [overloaded(), { text: 'never' }])
    const outcome = await settle(clock, { model, modelMiddleware: [] })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(model.asked).toHaveLength(1)
  })

  it.each([
    [{ modelRetry: { maxAttempts: 0 } }, /option modelRetry\.maxAttempts/],
    [{ modelRetry: { attempts: 3 } }, /option modelRetry: unknown option "attempts"|option modelRetry/],
    [{ modelBreaker: { threshold: Number.NaN } }, /option modelBreaker\.threshold/],
    [{ limits: { modelTimeoutMs: -1 } }, /option limits\.modelTimeoutMs/],
  ])('refuses bad sugar %j in createAgent()’s words', (bad, message) => {
    const clock = manualClock()
    const make = () => createAgent({ model: scripted(clock, []), tools: [], ...(bad as object) })
    expect(make).toThrow(OptionsError)
    expect(make).toThrow(message)
  })

  it('on the real clock: a model that never answers is given up at modelTimeoutMs, its signal aborted with the timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    try {
      const signals: AbortSignal[] = []
      const model: ModelAdapter = {
        generate: ({ signal }) => {
          signals.push(signal)
          return new Promise(() => {})
        },
      }
      const agent = createAgent({ model, tools: [], limits: { modelTimeoutMs: 20 }, modelRetry: { maxAttempts: 2, baseMs: 0, capMs: 0 } })
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
      const agent = createAgent({ model: { generate: async () => ({ text: 'done', toolCalls: [] }) }, tools: [] })
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
