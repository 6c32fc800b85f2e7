// The model onion under attack: third-party model middleware that breaks the contract, adapters that
// never answer, cancels at every await, many runs on one agent, throwing listeners and nonsense options.
// Everything goes through the API a user calls (createAgent, the layer factories); time is virtual.

import { type AgentEvent, createAgent as createCoreAgent, memoryCheckpoints } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { contextEditing } from '@shallot/context-editing'
import {
  defineTool,
  type LayerEntry,
  LoopError,
  MiddlewareUsageError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
} from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { fallback } from '@shallot/fallback'
import { rateLimit } from '@shallot/rate-limit'
import { memoryRetryBudget, retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createAgent, defaultModelMiddleware, OptionsError, ToolError } from './index.js'
import { answer, recorder, scripted, settle, stalling, unavailable } from './model-onion.hostile.support.js'

/** An agent on core's createAgent (no default layers) with `layers` as its model onion and virtual time. */
function agentWith(layers: LayerEntry<ModelMiddleware>[], model: ModelAdapter = scripted('m', [answer()])) {
  const clock = manualClock()
  const rec = recorder()
  const agent = createCoreAgent({ model, tools: [], modelMiddleware: layers, clock, onEvent: rec.onEvent })
  return { agent, clock, rec, model }
}

const stoppedWith = (outcome: Awaited<ReturnType<ReturnType<typeof agentWith>['agent']['run']>>) => {
  if (outcome.status !== 'stopped') throw new Error(`expected a stopped run, got ${outcome.status}`)
  return outcome.error
}

describe('a third-party model middleware that breaks the contract', () => {
  it('calls next() twice at once: the second is a usage error, and the first, answered after the outcome, is told nowhere', async () => {
    const twice: ModelMiddleware = async function twice(_ctx, next) {
      await Promise.all([next(), next()])
    }
    const model = stalling('m', false)
    const { agent, rec } = agentWith([twice], model)
    const outcome = await agent.run({ input: 'go' })
    const error = stoppedWith(outcome)
    expect(error.kind).toBe('model_failed')
    expect(error.cause).toBeInstanceOf(MiddlewareUsageError)
    expect(error.message).toMatch(/"twice" called next\(\) while its previous next\(\) was still pending/)
    expect(model.held).toHaveLength(1)
    // The orphaned first next() answers after the run's outcome: no event follows run.finished.
    model.held[0]?.answer(answer())
    await settle()
    expect(outcome.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 })
    expect(rec.types()).toEqual(['run.started', 'run.finished'])
  })

  it('calls next() again after it returned: the late call does not reach the model of a finished run', async () => {
    let kept: (() => Promise<void>) | undefined
    const late: ModelMiddleware = async function late(_ctx, next) {
      kept = next
      await next()
    }
    const model = scripted('m', [answer()])
    const { agent, rec } = agentWith([late], model)
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    expect(model.calls).toBe(1)
    const after = (kept as () => Promise<void>)()
    await expect(after).rejects.toThrow(MiddlewareUsageError)
    await expect(after).rejects.toThrow(/after the model call settled/)
    await settle()
    expect(model.calls).toBe(1)
    expect(rec.types().at(-1)).toBe('run.finished')
  })

  it('returns without calling next(): the run stops as model_failed naming the fix', async () => {
    const skip: ModelMiddleware = async function skip() {}
    const model = scripted('m', [answer()])
    const { agent } = agentWith([skip], model)
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/returned without calling next\(\)/)
    expect(error.details?.fix).toMatch(/await next\(\)/)
    expect(model.calls).toBe(0)
  })

  it('throws synchronously: the run stops as model_failed with the thrown error as its cause', async () => {
    const boom = new Error('layer exploded')
    const sync = function sync() {
      throw boom
    } as unknown as ModelMiddleware
    const model = scripted('m', [answer()])
    const { agent } = agentWith([sync], model)
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.cause).toBe(boom)
    expect(model.calls).toBe(0)
  })

  it('returns a non-promise after calling next(): a usage error (returned before its next() settled), never a half-read response', async () => {
    let inner: Promise<void> | undefined
    const plain = function plain(_ctx: unknown, next: () => Promise<void>) {
      inner = next()
      return 42
    } as unknown as ModelMiddleware
    const { agent } = agentWith([plain])
    const outcome = await agent.run({ input: 'go' })
    // It returned before its next() settled: compose's usage error, never a half-read response.
    const error = stoppedWith(outcome)
    expect(error.kind).toBe('model_failed')
    expect(error.cause).toBeInstanceOf(MiddlewareUsageError)
    // The attempt it left running settles after the call did: refused or answered, nothing reads it.
    await inner?.catch(() => {})
  })
})

describe('a model middleware that sets ctx.response to garbage', () => {
  const setting = (value: unknown): ModelMiddleware =>
    async function garbage(ctx, next) {
      await next()
      ;(ctx as { response?: unknown }).response = value
    }

  it.each([
    ['null', null],
    ['a string', 'the answer'],
    ['a number', 7],
  ])('%s: the run stops as model_failed, never completes with it', async (_name, value) => {
    const { agent } = agentWith([setting(value)])
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
  })

  it('toolCalls that is no list: the run stops as model_failed, no tool is dispatched from a string', async () => {
    const { agent } = agentWith([setting({ toolCalls: 'x' })])
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/toolCalls/)
  })

  it('an adapter that answers toolCalls: "x" fails its attempt (told in model.call), and the run stops as model_failed', async () => {
    const liar = { name: 'liar', generate: async () => ({ toolCalls: 'x' }) as unknown as ModelResponse }
    const { agent, rec } = agentWith([], liar)
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/the model adapter returned a response whose toolCalls is string, not a list of calls/)
    expect(rec.events.find((e) => e.type === 'model.call')).toMatchObject({ model: 'liar', code: 'TypeError' })
  })

  it('a tool call that is no call (null, no id): the run stops as model_failed', async () => {
    const { agent } = agentWith([setting({ toolCalls: [null] })])
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/toolCalls/)
  })

  it('text that is no string: the run does not complete with a non-string output', async () => {
    const { agent } = agentWith([setting({ text: { nested: true } })])
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/text/)
  })

  it('a __proto__ key: the output is the text, and no object prototype is polluted', async () => {
    const poisoned = JSON.parse('{"text":"ok","__proto__":{"polluted":true},"usage":{"__proto__":{"inputTokens":5}}}') as ModelResponse
    const { agent } = agentWith([setting(poisoned)])
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    if (outcome.status === 'completed') expect(outcome.output).toBe('ok')
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
    // An inherited inputTokens is no reported usage: nothing is counted from the prototype.
    expect(outcome.usage.inputTokens).toBe(0)
  })

  it('a huge, deep response: the run completes with its text and the events stay bounded', async () => {
    let deep: Record<string, unknown> = {}
    for (let i = 0; i < 10_000; i++) deep = { deep }
    const huge = { text: 'x'.repeat(1_000_000), extra: deep, finishReason: 'stop' }
    const { agent, rec } = agentWith([setting(huge)])
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    if (outcome.status === 'completed') expect(outcome.output).toHaveLength(1_000_000)
    expect(rec.types()).toEqual(['run.started', 'model.call', 'run.finished'])
  })

  it('swaps ctx.model to an unknown model: that adapter is asked, and events name it', async () => {
    const stranger = scripted('stranger', [answer('from stranger')])
    const swap: ModelMiddleware = async function swap(ctx, next) {
      ctx.model = { name: 'stranger', adapter: stranger }
      await next()
    }
    const model = scripted('m', [answer()])
    const { agent, rec } = agentWith([swap], model)
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    if (outcome.status === 'completed') expect(outcome.output).toBe('from stranger')
    expect(model.calls).toBe(0)
    expect(stranger.calls).toBe(1)
    expect(rec.events.find((e) => e.type === 'model.call')).toMatchObject({ model: 'stranger' })
  })

  it('swaps ctx.model to something with no generate(): the run stops as model_failed', async () => {
    const swap: ModelMiddleware = async function swap(ctx, next) {
      ctx.model = { name: 'ghost', adapter: {} as never }
      await next()
    }
    const { agent } = agentWith([swap])
    const error = stoppedWith(await agent.run({ input: 'go' }))
    expect(error.kind).toBe('model_failed')
    expect(LoopError.is(error)).toBe(true)
  })
})

describe('an adapter that never settles, under timeout', () => {
  // The real clock's deadline queue on vitest's fake timers: its timer is what could leak. 7_777 ms is this file's own queue.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it.each([
    ['ignores request.signal', false],
    ['reads request.signal', true],
  ])('%s: the run stops with a typed timeout, no timer is left, a late answer changes nothing', async (_name, reads) => {
    const model = stalling('slow', reads)
    const rec = recorder()
    const agent = createCoreAgent({ model, tools: [], modelMiddleware: [timeout({ ms: 7_777 })], onEvent: rec.onEvent })
    const running = agent.run({ input: 'go' })
    await settle()
    expect(model.held).toHaveLength(1)
    // The deadline is the queue's one fake timer, so a leak would show in the count.
    expect(vi.getTimerCount()).toBe(1)
    await vi.advanceTimersByTimeAsync(7_777)
    const error = stoppedWith(await running)
    expect(error.kind).toBe('model_failed')
    expect(ToolError.is(error.cause) && error.cause.code).toBe('timeout')
    expect(error.message).toMatch(/did not answer within 7777 ms/)
    expect(vi.getTimerCount()).toBe(0)
    // The adapter that listens was told to stop.
    expect(model.held[0]?.aborted()).toBe(reads)
    const told = rec.types()
    model.held[0]?.answer(answer('too late', 1_000))
    await settle()
    expect(rec.types()).toEqual(told)
    expect(told.at(-1)).toBe('run.finished')
    const finished = rec.events.at(-1)
    expect(finished?.type === 'run.finished' && finished.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 })
  })

  it('the default model stack: each of 3 attempts times out, the run stops as model_failed, no timer is left', async () => {
    const model = stalling('slow', false)
    const rec = recorder()
    // Attempts alone bound the call (no outage budget): three deadlines, not two minutes of them.
    const modelMiddleware = defaultModelMiddleware({ timeout: { ms: 7_777 }, retry: { outageBudgetMs: 0 } })
    const agent = createAgent({ model, tools: [], modelMiddleware, onEvent: rec.onEvent })
    const running = agent.run({ input: 'go' })
    await vi.runAllTimersAsync()
    const error = stoppedWith(await running)
    expect(error.kind).toBe('model_failed')
    expect(error.message).toMatch(/after 3 attempts: .*did not answer within 7777 ms/)
    expect(model.held).toHaveLength(3)
    expect(vi.getTimerCount()).toBe(0)
    const told = rec.types()
    for (const held of model.held) held.answer(answer('late', 1_000))
    await settle()
    expect(rec.types()).toEqual(told)
    expect(rec.types().filter((t) => t === 'model.retry')).toHaveLength(2)
  })
})

describe('a cancel at every await of the model onion', () => {
  const cancelled = (outcome: Awaited<ReturnType<ReturnType<typeof agentWith>['agent']['run']>>) => {
    const error = stoppedWith(outcome)
    expect(error.kind).toBe('cancelled')
  }

  it('while retry waits its backoff: the run ends at once, the model is not asked again, no sleeper is left', async () => {
    const model = scripted('m', [unavailable(), answer()])
    const { agent, clock, rec } = agentWith([retry({ maxAttempts: 3, baseMs: 1_000, capMs: 1_000, backoff: 'constant' })], model)
    const controller = new AbortController()
    const running = agent.run({ input: 'go', signal: controller.signal })
    await settle()
    expect(clock.pending).toBe(1)
    controller.abort()
    cancelled(await running)
    expect(model.calls).toBe(1)
    expect(clock.pending).toBe(0)
    await clock.runAll()
    expect(model.calls).toBe(1)
    expect(rec.types().at(-1)).toBe('run.finished')
  })

  it('while rateLimit waits its turn: the run ends at once, the model is not asked, the place is given back', async () => {
    const model = scripted('m', [answer()])
    const { agent, clock } = agentWith([rateLimit({ limit: 1, perMs: 10_000, maxWaitMs: 60_000 })], model)
    expect((await agent.run({ input: 'first' })).status).toBe('completed')
    const controller = new AbortController()
    const running = agent.run({ input: 'second', signal: controller.signal })
    await settle()
    expect(clock.pending).toBe(1)
    controller.abort()
    cancelled(await running)
    expect(model.calls).toBe(1)
    expect(clock.pending).toBe(0)
    // The cancelled waiter's place was given back: the next run waits one interval, not two.
    const third = agent.run({ input: 'third' })
    await clock.advance(10_000)
    expect((await third).status).toBe('completed')
  })

  it.each([
    ['ignores request.signal', false],
    ['reads request.signal', true],
  ])('while the adapter thinks (%s): the run ends at once, a late answer changes nothing', async (_name, reads) => {
    const model = stalling('slow', reads)
    const { agent, rec } = agentWith([retry(), timeout({ ms: 60_000 })], model)
    const controller = new AbortController()
    const running = agent.run({ input: 'go', signal: controller.signal })
    await settle()
    controller.abort()
    const outcome = await running
    cancelled(outcome)
    expect(model.held[0]?.aborted()).toBe(reads)
    const told = rec.types()
    model.held[0]?.answer(answer('late', 1_000))
    await settle()
    expect(rec.types()).toEqual(told)
    expect(outcome.usage.inputTokens).toBe(0)
    expect(model.held).toHaveLength(1)
  })

  it('while the spare model thinks, after a fallback: cancelled, not fallback_exhausted', async () => {
    const primary = scripted('primary', [unavailable()])
    const spare = stalling('spare', true)
    const { agent, rec } = agentWith([fallback({ models: [spare] })], primary)
    const controller = new AbortController()
    const running = agent.run({ input: 'go', signal: controller.signal })
    await settle()
    expect(spare.held).toHaveLength(1)
    controller.abort()
    cancelled(await running)
    expect(spare.held[0]?.aborted()).toBe(true)
    expect(rec.types()).toEqual(['run.started', 'model.call', 'model.fallback', 'run.finished'])
  })

  it('the moment the fallback is told (a listener cancels on model.fallback): the spare is never asked', async () => {
    const primary = scripted('primary', [unavailable()])
    const spare = scripted('spare', [answer()])
    const controller = new AbortController()
    const rec = recorder()
    const agent = createCoreAgent({
      model: primary,
      tools: [],
      clock: manualClock(),
      modelMiddleware: [fallback({ models: [spare] })],
      onEvent: (event) => {
        rec.onEvent(event)
        if (event.type === 'model.fallback') controller.abort()
      },
    })
    cancelled(await agent.run({ input: 'go', signal: controller.signal }))
    expect(spare.calls).toBe(0)
  })
})

describe('nonsense numbers in a model layer factory', () => {
  const bad = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1] as const
  // [what, option path, build with the value]: every numeric option of every model layer.
  const factories: [string, string, (v: number) => unknown][] = [
    ['retry()', 'maxAttempts', (v) => retry({ maxAttempts: v })],
    ['retry()', 'baseMs', (v) => retry({ baseMs: v })],
    ['retry()', 'capMs', (v) => retry({ capMs: v })],
    ['retry()', 'maxElapsedMs', (v) => retry({ maxElapsedMs: v })],
    ['retry()', 'maxRetryAfterMs', (v) => retry({ maxRetryAfterMs: v })],
    ['retry()', 'retryBudgetCosts.retry', (v) => retry({ retryBudgetCosts: { retry: v } })],
    ['retry()', 'perCode.rate_limited.maxAttempts', (v) => retry({ perCode: { rate_limited: { maxAttempts: v } } })],
    ['memoryRetryBudget()', 'maxTokens', (v) => memoryRetryBudget({ maxTokens: v })],
    ['timeout()', 'ms', (v) => timeout({ ms: v })],
    ['timeout()', 'models.gpt', (v) => timeout({ models: { gpt: v } })],
    ['circuitBreaker()', 'cooldownMs', (v) => circuitBreaker({ cooldownMs: v })],
    ['circuitBreaker()', 'maxCooldownMs', (v) => circuitBreaker({ maxCooldownMs: v })],
    ['circuitBreaker()', 'cooldownGrowth', (v) => circuitBreaker({ cooldownGrowth: v })],
    ['circuitBreaker()', 'halfOpenProbes', (v) => circuitBreaker({ halfOpenProbes: v })],
    ['circuitBreaker()', 'maxHalfOpenMs', (v) => circuitBreaker({ maxHalfOpenMs: v })],
    ['consecutive()', 'threshold', (v) => consecutive({ threshold: v })],
    ['rateLimit()', 'limit', (v) => rateLimit({ limit: v })],
    ['rateLimit()', 'perMs', (v) => rateLimit({ limit: 1, perMs: v })],
    ['rateLimit()', 'burst', (v) => rateLimit({ limit: 1, burst: v })],
    ['rateLimit()', 'maxWaitMs', (v) => rateLimit({ limit: 1, maxWaitMs: v })],
    ['rateLimit()', 'storeTimeoutMs', (v) => rateLimit({ limit: 1, storeTimeoutMs: v })],
    ['errorClassifier()', 'maxRetryAfterMs', (v) => errorClassifier({ maxRetryAfterMs: v })],
    ['contextEditing()', 'maxInputTokens', (v) => contextEditing({ maxInputTokens: v })],
    ['contextEditing()', 'keep', (v) => contextEditing({ keep: v })],
    ['contextEditing()', 'charsPerToken', (v) => contextEditing({ charsPerToken: v })],
    ['contextEditing()', 'models.gpt', (v) => contextEditing({ models: { gpt: v } })],
    // defaultModelMiddleware() hands each layer its options and the layer checks them (documented): its words name the layer.
    ['timeout()', 'ms', (v) => defaultModelMiddleware({ timeout: { ms: v } })],
    ['retry()', 'baseMs', (v) => defaultModelMiddleware({ retry: { baseMs: v } })],
    ['retry()', 'maxAttempts', (v) => defaultModelMiddleware({ retry: { maxAttempts: v } })],
    ['circuitBreaker()', 'cooldownMs', (v) => defaultModelMiddleware({ circuitBreaker: { cooldownMs: v } })],
  ]
  // maxAttempts: Infinity is documented ("let only the backoff and the ceiling decide"): tested below, not refused.
  const documentedInfinity = new Set(['maxAttempts', 'perCode.rate_limited.maxAttempts'])
  const cases = factories.flatMap(([owner, path, build]) =>
    bad
      .filter((v) => !(owner === 'retry()' && documentedInfinity.has(path) && v === Number.POSITIVE_INFINITY))
      .map((v) => [owner, path, v, build] as const),
  )

  it('retry({ maxAttempts: Infinity }) is accepted as documented, and its retry budget still ends a failing call', async () => {
    const model = scripted('m', [unavailable()])
    const retryBudget = memoryRetryBudget({ maxTokens: 15 })
    const { agent, clock } = agentWith(
      [retry({ maxAttempts: Number.POSITIVE_INFINITY, backoff: 'constant', baseMs: 10, retryBudget })],
      model,
    )
    const running = agent.run({ input: 'go' })
    await clock.runAll()
    expect(stoppedWith(await running).kind).toBe('model_failed')
    // 15 tokens at 5 a retry: 3 retries, 4 attempts in all.
    expect(model.calls).toBe(4)
  })

  it.each(cases)('%s %s = %s: an OptionsError naming the option and what it must be', (owner, path, value, build) => {
    let thrown: unknown
    try {
      build(value)
    } catch (err) {
      thrown = err
    }
    expect(thrown, `${owner} accepted ${path} = ${value}`).toBeInstanceOf(OptionsError)
    const message = (thrown as Error).message
    expect(message).toContain(owner)
    expect(message).toContain(path)
    // The fix: what the option must be, in words (not zod's bare "Invalid input").
    expect(message).toMatch(/must|expected|at least|at most|greater|less/i)
  })
})

/** The input of a request: the run's task, the first user message. */
const taskOf = (request: ModelRequest) => (request.messages[0] as { content: string }).content

describe('50 runs at once on one agent', () => {
  it('share one retry budget and one breaker: the breaker opens once, the budget is never overspent, each run ends on its own', async () => {
    const clock = manualClock()
    const budget = memoryRetryBudget({ maxTokens: 20 })
    let lowest = budget.available()
    const retryBudget = {
      tryTake: (tokens: number) => {
        const taken = budget.tryTake(tokens)
        lowest = Math.min(lowest, budget.available())
        return taken
      },
      refill: (tokens: number) => budget.refill(tokens),
      available: () => budget.available(),
    }
    let down = true
    const model: ModelAdapter & { calls: number } = {
      name: 'm',
      calls: 0,
      async generate(request) {
        model.calls++
        const i = Number(taskOf(request))
        // Each run's call settles at its own virtual moment, so the runs interleave.
        await clock.sleep((i * 7) % 13)
        if (down) throw unavailable()
        return answer(`out ${i}`, i + 1)
      },
    }
    const rec = recorder()
    const agent = createCoreAgent({
      model,
      tools: [],
      clock,
      random: () => 0.5,
      onEvent: rec.onEvent,
      modelMiddleware: [
        circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 60_000 }),
        retry({ maxAttempts: 3, backoff: 'constant', baseMs: 100, retryBudget }),
      ],
    })
    const ids = Array.from({ length: 50 }, (_, i) => i)
    const storm = ids.map((i) => agent.run({ input: String(i), runId: `storm-${i}` }))
    await clock.runAll()
    const stormOutcomes = await Promise.all(storm)
    for (const outcome of stormOutcomes) expect(stoppedWith(outcome).kind).toBe('model_failed')
    const opened = rec.events.filter((e) => e.type === 'model.circuit' && e.to === 'open')
    expect(opened).toHaveLength(1)
    // 20 tokens at 5 a retry: 4 retries in all, whatever the interleaving, and the bucket never went below empty.
    expect(rec.events.filter((e) => e.type === 'model.retry')).toHaveLength(4)
    expect(lowest).toBeGreaterThanOrEqual(0)
    expect(model.calls).toBe(54)

    // Past the cooldown, one run closes the circuit; then 49 at once each get their own answer.
    down = false
    await clock.advance(60_000)
    const probe = agent.run({ input: '0', runId: 'probe' })
    await clock.runAll()
    expect((await probe).status).toBe('completed')
    rec.events.length = 0
    const calm = ids.slice(1).map((i) => agent.run({ input: String(i), runId: `calm-${i}` }))
    await clock.runAll()
    const calmOutcomes = await Promise.all(calm)
    calmOutcomes.forEach((outcome, k) => {
      const i = k + 1
      expect(outcome.status).toBe('completed')
      if (outcome.status === 'completed') expect(outcome.output).toBe(`out ${i}`)
      expect(outcome.usage).toEqual({ inputTokens: i + 1, outputTokens: i + 1, costUsd: 0 })
      const own = rec.events.filter((e) => 'runId' in e && e.runId === `calm-${i}`).map((e) => e.type)
      expect(own).toEqual(['run.started', 'model.call', 'run.finished'])
    })
  })

  it('keep their own run.state, transcript and usage when a layer writes state and the turns interleave', async () => {
    const clock = manualClock()
    const checkpoints = memoryCheckpoints()
    const model: ModelAdapter = {
      name: 'm',
      async generate(request) {
        const i = Number(taskOf(request))
        await clock.sleep((i * 11) % 17)
        const toolTurn = request.messages.length === 1
        return toolTurn
          ? { toolCalls: [{ id: `c${i}`, name: 'note', args: { n: i } }], usage: { inputTokens: i, outputTokens: 0 } }
          : answer(`done ${i}`, i)
      },
    }
    // A third-party layer that keeps per-run state: it must only ever see its own run's.
    const stateful: ModelMiddleware = async function stateful(ctx, next) {
      const state = ctx.run.state as { owner?: string; calls?: number }
      const mine = taskOf({ ...ctx.request, signal: ctx.signal })
      if (state.owner !== undefined && state.owner !== mine) throw new Error(`run ${ctx.run.id} saw state of ${state.owner}`)
      state.owner = mine
      state.calls = (state.calls ?? 0) + 1
      await next()
    }
    const note = defineTool({ name: 'note', description: 'Note n', input: z.object({ n: z.number() }), execute: ({ n }) => `noted ${n}` })
    const agent = createCoreAgent({ model, tools: [note], clock, checkpoints, modelMiddleware: [stateful] })
    const runs = Array.from({ length: 50 }, (_, i) => agent.run({ input: String(i), runId: `run-${i}` }))
    await clock.runAll()
    const outcomes = await Promise.all(runs)
    for (const [i, outcome] of outcomes.entries()) {
      expect(outcome.status).toBe('completed')
      if (outcome.status === 'completed') expect(outcome.output).toBe(`done ${i}`)
      expect(outcome.usage).toEqual({ inputTokens: 2 * i, outputTokens: i, costUsd: 0 })
      expect(outcome.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([`noted ${i}`])
      const saved = await checkpoints.load(`run-${i}`)
      expect(saved?.state).toMatchObject({ owner: String(i), calls: 2 })
    }
  })
})

describe('an onEvent listener that throws on model events', () => {
  /** What a run ends with, without its id and timing: the same for the same script. */
  const essence = (outcome: Awaited<ReturnType<ReturnType<typeof agentWith>['agent']['run']>>) => ({
    status: outcome.status,
    output: outcome.status === 'completed' ? outcome.output : undefined,
    kind: outcome.status === 'stopped' ? outcome.error.kind : undefined,
    usage: outcome.usage,
    transcript: outcome.transcript,
  })

  async function runWith(onEvent: ((event: AgentEvent) => unknown) | undefined, logged: string[] = []) {
    const clock = manualClock()
    const primary = scripted('primary', [unavailable(), unavailable(), unavailable()])
    const spare = scripted('spare', [unavailable(), answer('from spare', 7)])
    const logger = {
      info: () => {},
      warn: () => {},
      debug: () => {},
      error: (_o: unknown, msg?: string) => {
        logged.push(String(msg))
      },
      child() {
        return logger
      },
    }
    const agent = createCoreAgent({
      model: primary,
      tools: [],
      clock,
      random: () => 0.5,
      logger,
      ...(onEvent === undefined ? {} : { onEvent: onEvent as (event: AgentEvent) => void }),
      modelMiddleware: [fallback({ models: [spare] }), retry({ maxAttempts: 2, backoff: 'constant', baseMs: 10 })],
    })
    const running = agent.run({ input: 'go', runId: 'same' })
    await clock.runAll()
    return essence(await running)
  }

  it.each([
    [
      'throws an Error on model.call',
      (e: AgentEvent) => {
        if (e.type === 'model.call') throw new Error('listener down')
      },
    ],
    [
      'throws a string on every model event',
      (e: AgentEvent) => {
        if (e.type.startsWith('model.')) throw 'listener down'
      },
    ],
    [
      'throws on run.finished',
      (e: AgentEvent) => {
        if (e.type === 'run.finished') throw new Error('listener down')
      },
    ],
  ])("%s: the outcome is the quiet agent's", async (_name, listener) => {
    const quiet = await runWith(undefined)
    expect(quiet).toMatchObject({ status: 'completed', output: 'from spare' })
    const logged: string[] = []
    expect(await runWith(listener, logged)).toEqual(quiet)
    expect(logged.filter((m) => /onEvent listener threw/.test(m))).toHaveLength(1)
  })

  it("is async and rejects: the outcome is the quiet agent's, and the rejection is logged, not left unhandled", async () => {
    const quiet = await runWith(undefined)
    const logged: string[] = []
    const outcome = await runWith(async (e: AgentEvent) => {
      if (e.type === 'model.call') throw new Error('listener down')
    }, logged)
    await settle()
    expect(outcome).toEqual(quiet)
    expect(logged.filter((m) => /onEvent listener threw/.test(m))).toHaveLength(1)
  })

  it("has a within that throws: the outcome is the quiet agent's", async () => {
    const quiet = await runWith(undefined)
    const listener = Object.assign(() => {}, {
      within: () => {
        throw new Error('no context today')
      },
    })
    expect(await runWith(listener)).toEqual(quiet)
  })
})

describe('a model a layer asks instead of the agent’s own', () => {
  it('under limits.maxCostUsd, an unpriced spare cannot spend past the budget uncounted: the run stops naming the price to add', async () => {
    const primary = scripted('primary', [unavailable()])
    // The spare keeps the run going with a tool call per turn, a million tokens each.
    const spare = scripted('spare', [
      { toolCalls: [{ id: 'c1', name: 'note', args: { n: 1 } }], usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } },
    ])
    const note = defineTool({ name: 'note', description: 'Note n', input: z.object({ n: z.number() }), execute: () => 'ok' })
    const agent = createCoreAgent({
      model: primary,
      tools: [note],
      clock: manualClock(),
      prices: { primary: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } },
      limits: { maxCostUsd: 0.5, maxTurns: 5 },
      modelMiddleware: [fallback({ models: [spare] })],
    })
    const outcome = await agent.run({ input: 'go' })
    const error = stoppedWith(outcome)
    expect(error.kind).toBe('budget_exhausted')
    expect(outcome.status === 'stopped' && outcome.report.text).toMatch(/add prices\['spare'\]/)
    expect(error.message).toMatch(/cannot count model 'spare': it has no price/)
    expect(error.details?.fix).toMatch(/prices\['spare'\]/)
    expect(spare.calls).toBe(1)
  })
})

describe('a late answer of an attempt that timed out, under retry', () => {
  it('is never taken for the next attempt’s answer: the output and usage are the fresh attempt’s', async () => {
    const clock = manualClock()
    const model = stalling('slow', false)
    const rec = recorder()
    const agent = createCoreAgent({
      model,
      tools: [],
      clock,
      random: () => 0.5,
      onEvent: rec.onEvent,
      modelMiddleware: [retry({ maxAttempts: 2, backoff: 'constant', baseMs: 10 }), timeout({ ms: 1_000 })],
    })
    const running = agent.run({ input: 'go' })
    await clock.advance(1_000)
    await clock.advance(10)
    expect(model.held).toHaveLength(2)
    model.held[0]?.answer(answer('stale', 500))
    await settle()
    model.held[1]?.answer(answer('fresh', 3))
    const outcome = await running
    expect(outcome.status === 'completed' && outcome.output).toBe('fresh')
    expect(outcome.usage).toEqual({ inputTokens: 3, outputTokens: 3, costUsd: 0 })
    const calls = rec.events.filter((e) => e.type === 'model.call')
    expect(calls.map((e) => e.type === 'model.call' && [e.attempt, e.code ?? 'ok'])).toEqual([
      [1, 'timeout'],
      [2, 'ok'],
    ])
  })
})

describe('an adapter that throws something hostile, bare and under the default model stack', () => {
  const hostile: [string, () => unknown][] = [
    ['null', () => null],
    ['undefined', () => undefined],
    ['a string', () => 'boom'],
    [
      'an object whose status getter throws',
      () => ({
        get status() {
          throw new Error('gotcha')
        },
        message: 'x',
      }),
    ],
    [
      'a revoked proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {})
        revoke()
        return proxy
      },
    ],
    [
      'an error whose cause is itself',
      () => {
        const err = new Error('loop') as Error & { cause?: unknown; status?: number }
        err.cause = err
        return err
      },
    ],
  ]

  const stacks = [
    ['bare', undefined],
    ['the default model stack', defaultModelMiddleware],
  ] as const
  it.each(hostile.flatMap(([name, make]) => stacks.map(([stack, layers]) => [name, stack, make, layers] as const)))(
    '%s, %s: the run stops as model_failed, agent.run never rejects, the attempt is told',
    async (_name, _stack, make, layers) => {
      const model = {
        name: 'm',
        generate: async () => {
          throw make()
        },
      }
      const told: string[] = []
      const agent = createAgent({
        model,
        tools: [],
        clock: manualClock(),
        random: () => 0.5,
        onEvent: (e) => e.type === 'model.call' && told.push(e.code ?? 'ok'),
        ...(layers === undefined ? {} : { modelMiddleware: layers() }),
      })
      const outcome = await agent.run({ input: 'go' })
      expect(stoppedWith(outcome).kind).toBe('model_failed')
      expect(outcome.status === 'stopped' && typeof outcome.report.text).toBe('string')
      expect(told).toHaveLength(1)
    },
  )
})

describe('a model middleware that hands the layers inside a signal of its own', () => {
  // Against the contract (docs/writing-middleware.md: a layer's own signal follows the one it replaced), but the
  // run's cancel must still end the run: it kept a cancelled run waiting, then completed it with the late answer.
  it("that ignores the run's cancel cannot keep a cancelled run going: it ends as cancelled at once, the late answer is dropped", async () => {
    const model = stalling('slow', true)
    const detach: ModelMiddleware = async function detach(ctx, next) {
      ctx.signal = new AbortController().signal
      await next()
    }
    const { agent, rec } = agentWith([detach], model)
    const controller = new AbortController()
    let settled = false
    const running = agent.run({ input: 'go', signal: controller.signal }).finally(() => {
      settled = true
    })
    await settle()
    controller.abort()
    await settle()
    expect(settled).toBe(true)
    const outcome = await running
    expect(stoppedWith(outcome).kind).toBe('cancelled')
    model.held[0]?.answer(answer('late', 9))
    await settle()
    expect(outcome.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 })
    expect(rec.types()).toEqual(['run.started', 'run.finished'])
  })
})

describe('a retry budget store that answers slowly', () => {
  it('a cancel while it is asked ends the run at once, and its late yes tells no model.retry after the outcome', async () => {
    let answerTake: (yes: boolean) => void = () => {}
    const retryBudget = {
      tryTake: () =>
        new Promise<boolean>((resolve) => {
          answerTake = resolve
        }),
      refill: () => {},
      available: () => 500,
    }
    const model = scripted('m', [unavailable(), answer()])
    const { agent, rec, clock } = agentWith([retry({ maxAttempts: 3, backoff: 'constant', baseMs: 10, retryBudget })], model)
    const controller = new AbortController()
    const running = agent.run({ input: 'go', signal: controller.signal })
    await settle()
    controller.abort()
    const outcome = await running
    expect(stoppedWith(outcome).kind).toBe('cancelled')
    answerTake(true)
    await settle()
    await clock.runAll()
    expect(model.calls).toBe(1)
    expect(rec.types()).toEqual(['run.started', 'model.call', 'run.finished'])
  })
})

describe('50 runs at once through one rateLimit', () => {
  it('never lets more than the limit reach the model in any window, and every run completes with its own answer', async () => {
    const clock = manualClock()
    const at: number[] = []
    const model: ModelAdapter = {
      name: 'm',
      async generate(request) {
        at.push(clock.now())
        return answer(`out ${taskOf(request)}`, 1)
      },
    }
    const agent = createCoreAgent({
      model,
      tools: [],
      clock,
      modelMiddleware: [rateLimit({ limit: 5, perMs: 1_000, burst: 5, maxWaitMs: 60_000 })],
    })
    const runs = Array.from({ length: 50 }, (_, i) => agent.run({ input: String(i) }))
    await clock.runAll()
    const outcomes = await Promise.all(runs)
    outcomes.forEach((outcome, i) => {
      expect(outcome.status === 'completed' && outcome.output).toBe(`out ${i}`)
    })
    expect(at).toHaveLength(50)
    // Any window of 1,000 ms holds at most burst + the calls that refilled within it.
    for (const start of at) expect(at.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(5 + 5)
    // 5 at once, then one every 200 ms: the 50th at 9 s.
    expect(Math.max(...at)).toBe(9_000)
  })

  it('a key function that throws or answers no string stops the run as model_failed, naming key', async () => {
    for (const key of [
      () => {
        throw new Error('no key today')
      },
      () => 42 as unknown as string,
    ]) {
      const model = scripted('m', [answer()])
      const { agent } = agentWith([rateLimit({ limit: 1, key })], model)
      const error = stoppedWith(await agent.run({ input: 'go' }))
      expect(error.kind).toBe('model_failed')
      expect(error.message).toMatch(/key/)
      expect(model.calls).toBe(0)
    }
  })
})

describe('a third-party layer that sets ctx.attempt to nonsense inside circuitBreaker', () => {
  it('does not keep the circuit from opening after threshold failures', async () => {
    const model = scripted('m', [unavailable()])
    const nonsense: ModelMiddleware = async function nonsense(ctx, next) {
      ctx.attempt = Number.NaN
      await next()
    }
    const { agent, rec } = agentWith([circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 60_000 }), nonsense], model)
    for (let i = 0; i < 4; i++) await agent.run({ input: 'go' })
    expect(rec.events.filter((e) => e.type === 'model.circuit' && e.to === 'open')).toHaveLength(1)
    expect(model.calls).toBe(3)
  })
})
