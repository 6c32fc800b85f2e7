// The layers (fallback({ models }), circuitBreaker() and a retry layer) must give the outcome core's own
// model chain (`model: [a, b]`, its breaker and retry) gave for the same scenario: the scenarios and their
// expectations are core's tests of the chain (core/src/agent-model.test.ts). That chain is gone: createAgent takes
// one model, and a spare is this layer.

import { type Agent, type AgentEvent, createAgent, type RunOutcome } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type Clock, defineTool, LoopError, type ModelAdapter, type ModelMiddleware, type ModelResponse, ToolError } from '@shallot/core'
import { isTransientModelError } from '@shallot/core/kit'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallback } from './index.js'

/** Core's test clock: a sleep returns at once and moves `now` by its length. */
function virtualClock(): Clock & { advance(ms: number): void } {
  let now = 0
  return {
    now: () => now,
    advance(ms) {
      now += ms
    },
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason
      now += ms
    },
    timer: () => () => {},
  }
}

/** Core's default model retry as a third-party layer: 3 attempts, never sooner than Retry-After (the jitter is 0 here). */
const retryLikeCore: ModelMiddleware = async function retryLikeCore(ctx, next) {
  for (;;) {
    try {
      return await next()
    } catch (err) {
      if (ctx.attempt >= 3 || LoopError.is(err) || !isTransientModelError(err)) throw err
      await ctx.clock.sleep(ToolError.is(err) ? (err.retryAfterMs ?? 0) : 0, ctx.signal)
      ctx.attempt++
    }
  }
}

type Path = 'layers'

/** The agent of a chain: `model: a` with the layers that replace core's `model: [a, b]`. */
function chainAgent(_path: Path, models: [ModelAdapter, ModelAdapter], clock: Clock, onEvent: (e: AgentEvent) => void): Agent {
  const common = { tools: [echo], clock, random: () => 0, onEvent }
  const layers = [
    fallback({ models: [models[1]] }),
    circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 30_000 }),
    retryLikeCore,
  ]
  return createAgent({ ...common, model: models[0], modelMiddleware: layers })
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})
const callEcho: ModelResponse = { toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'hi' } }] }
const overloaded = () =>
  new ToolError('overloaded', 'the model provider is overloaded (529 overloaded_error): Overloaded', {
    category: 'transient',
    retryable: true,
    details: { status: 529, type: 'overloaded_error', providerMessage: 'Overloaded' },
  })
const rateLimited = (retryAfterMs: number) =>
  new ToolError('rate_limited', 'the model provider is rate limiting (429 rate_limit_exceeded): slow down', {
    category: 'transient',
    retryable: true,
    retryAfterMs,
    details: { status: 429, providerMessage: 'slow down' },
  })

/** A model whose behaviour the scenario switches; it counts what it was asked. */
function switchable(name: string, play: (asked: number, signal: AbortSignal) => Promise<ModelResponse>) {
  const model = {
    name,
    asked: 0,
    play,
    generate: ({ signal }: { signal: AbortSignal }) => model.play(++model.asked, signal),
  }
  return model
}
const fail = (make: () => Error) => () => Promise.reject(make())
const answers =
  (...steps: ModelResponse[]) =>
  (asked: number) =>
    Promise.resolve(steps[Math.min(asked - 1, steps.length - 1)] as ModelResponse)

const outcomeOf = (o: RunOutcome) =>
  o.status === 'stopped'
    ? { status: o.status, kind: o.error.kind, message: o.error.message, details: o.error.details, why: o.report.why }
    : { status: o.status, output: o.status === 'completed' ? o.output : undefined }
const policyEvent = (e: AgentEvent) =>
  e.type === 'model.fallback'
    ? `fallback ${e.from}>${e.to}: ${e.reason}`
    : e.type === 'model.circuit'
      ? `circuit ${e.model} ${e.from}>${e.to}: ${e.reason}`
      : undefined

interface Scenario {
  readonly title: string
  readonly play: (path: Path) => Promise<unknown>
  /** What core's test asserts of it, held for both paths. */
  readonly expected: (seen: never) => void
}

const scenarios: Scenario[] = [
  {
    title: 'skips a failing primary once its circuit opens, completes on the secondary; after the cooldown one probe closes it',
    async play(path) {
      const clock = virtualClock()
      const events: string[] = []
      const primary = switchable('primary', fail(overloaded))
      const secondary = switchable('secondary', answers(callEcho, { text: 'done on secondary' }))
      const agent = chainAgent(path, [primary, secondary], clock, (e) => {
        const line = policyEvent(e)
        if (line !== undefined) events.push(line)
      })
      const first = outcomeOf(await agent.run({ input: 'x' }))
      const asked = [primary.asked, secondary.asked]
      clock.advance(30_000)
      primary.play = answers({ text: 'back' })
      const healed = outcomeOf(await agent.run({ input: 'y' }))
      return { first, asked, healed, events }
    },
    expected: (seen: { first: unknown; asked: number[]; healed: unknown; events: string[] }) => {
      expect(seen.first).toEqual({ status: 'completed', output: 'done on secondary' })
      expect(seen.asked).toEqual([3, 2])
      expect(seen.healed).toEqual({ status: 'completed', output: 'back' })
      expect(seen.events).toEqual([
        'circuit primary closed>open: 3 consecutive failures',
        'fallback primary>secondary: primary: 529 the provider is overloaded (Overloaded); circuit open',
        'fallback primary>secondary: primary: skipped: circuit open (30000 ms left)',
        'circuit primary open>half-open: cooldown of 30000 ms elapsed',
        'circuit primary half-open>closed: probe succeeded',
      ])
    },
  },
  {
    title: 'ends as fallback_exhausted naming each model, its attempts, circuit and last error; while both are open, asks neither',
    async play(path) {
      const clock = virtualClock()
      const primary = switchable('gpt-4o-mini', fail(overloaded))
      const secondary = switchable(
        'claude-sonnet-4-5',
        fail(() => rateLimited(1000)),
      )
      const agent = chainAgent(path, [primary, secondary], clock, () => {})
      const first = outcomeOf(await agent.run({ input: 'x' }))
      const again = outcomeOf(await agent.run({ input: 'y' }))
      return { first, again, asked: primary.asked + secondary.asked }
    },
    expected: (seen: { first: { details: unknown; message: string; why: string }; again: { details: unknown }; asked: number }) => {
      expect(seen.first.message).toBe('every model of the chain was unavailable (gpt-4o-mini, claude-sonnet-4-5)')
      expect(seen.first.details).toEqual({
        models: [
          { model: 'gpt-4o-mini', attempts: 3, circuit: 'open', error: '529 the provider is overloaded (Overloaded); circuit open' },
          {
            model: 'claude-sonnet-4-5',
            attempts: 3,
            circuit: 'open',
            error: '429 rate limited by the provider (slow down), Retry-After 1 s; circuit open',
          },
        ],
        failure:
          'gpt-4o-mini: 529 the provider is overloaded (Overloaded); circuit open; claude-sonnet-4-5: 429 rate limited by the provider (slow down), Retry-After 1 s; circuit open',
      })
      expect(seen.first.why).toMatch(/^every model in the fallback chain was unavailable: gpt-4o-mini: 529/)
      expect(seen.again.details).toMatchObject({
        models: [
          { model: 'gpt-4o-mini', attempts: 0, circuit: 'open', error: 'skipped: circuit open (28000 ms left)' },
          { model: 'claude-sonnet-4-5', attempts: 0, circuit: 'open', error: 'skipped: circuit open (30000 ms left)' },
        ],
      })
      expect(seen.asked).toBe(6)
    },
  },
  {
    title: 'a LoopError of the primary ends the run as the same object; it does not fall back',
    async play(path) {
      const hard = new LoopError('context_exceeded', 'too long')
      const primary = switchable('a', () => Promise.reject(hard))
      const secondary = switchable('b', answers({ text: 'never' }))
      const outcome = await chainAgent(path, [primary, secondary], virtualClock(), () => {}).run({ input: 'x' })
      return { same: outcome.status === 'stopped' && outcome.error === hard, asked: secondary.asked }
    },
    expected: (seen: { same: boolean; asked: number }) => expect(seen).toEqual({ same: true, asked: 0 }),
  },
  {
    title: 'a failure that is not transient ends the run as model_failed naming the model; it does not fall back',
    async play(path) {
      const primary = switchable(
        'a',
        fail(() => Object.assign(new Error('bad field'), { status: 400 })),
      )
      const secondary = switchable('b', answers({ text: 'never' }))
      const outcome = outcomeOf(await chainAgent(path, [primary, secondary], virtualClock(), () => {}).run({ input: 'x' }))
      return { outcome, asked: secondary.asked }
    },
    expected: (seen: { outcome: { kind: string; message: string; details: unknown }; asked: number }) => {
      expect(seen.outcome).toMatchObject({
        kind: 'model_failed',
        message: 'the model call failed after 1 attempt: bad field',
        details: { model: 'a', attempts: 1, failure: '400 bad field' },
      })
      expect(seen.asked).toBe(0)
    },
  },
  {
    title: 'a throwing onEvent listener changes nothing',
    async play(path) {
      const primary = switchable('a', fail(overloaded))
      const secondary = switchable('b', answers({ text: 'fine' }))
      const agent = chainAgent(path, [primary, secondary], virtualClock(), () => {
        throw new Error('listener down')
      })
      return outcomeOf(await agent.run({ input: 'x' }))
    },
    expected: (seen: unknown) => expect(seen).toEqual({ status: 'completed', output: 'fine' }),
  },
  {
    title: 'a cancelled half-open probe frees its slot: the next run probes the primary again',
    async play(path) {
      const clock = virtualClock()
      const primary = switchable('primary', fail(overloaded))
      const secondary = switchable('secondary', answers({ text: 'secondary' }))
      const agent = chainAgent(path, [primary, secondary], clock, () => {})
      const opened = outcomeOf(await agent.run({ input: 'open it' }))
      clock.advance(30_000)
      primary.play = (_asked, signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
      const controller = new AbortController()
      const probing = agent.run({ input: 'probe', signal: controller.signal })
      await new Promise((resolve) => setImmediate(resolve))
      controller.abort(new Error('user gave up'))
      const cancelled = outcomeOf(await probing)
      primary.play = answers({ text: 'primary is back' })
      const back = outcomeOf(await agent.run({ input: 'again' }))
      return { opened, cancelled: cancelled.status === 'stopped' && 'kind' in cancelled && cancelled.kind, back, asked: primary.asked }
    },
    expected: (seen: { opened: unknown; cancelled: unknown; back: unknown; asked: number }) =>
      expect(seen).toEqual({
        opened: { status: 'completed', output: 'secondary' },
        cancelled: 'cancelled',
        back: { status: 'completed', output: 'primary is back' },
        asked: 5,
      }),
  },
]

describe("the model chain: the layers give core's chain's outcome", () => {
  it.each(scenarios)('$title', async ({ play, expected }) => {
    expected((await play('layers')) as never)
  })
})
