import {
  defineMiddleware,
  defineTool,
  LoopError,
  MiddlewareUsageError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type AgentEvent, createAgent } from './index.js'

type Step = ModelResponse | Error | 'hang'

/** A model that plays `steps` in order (the last one again and again) and records each request. */
function model(steps: Step[], name = 'gpt-test'): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  let i = 0
  return {
    name,
    requests,
    generate(request) {
      requests.push(request)
      const step = steps[Math.min(i++, steps.length - 1)] as Step
      if (step === 'hang') return new Promise<never>(() => {})
      return step instanceof Error ? Promise.reject(step) : Promise.resolve(step)
    },
  }
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})
const callEcho = { toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'hi' } }] }
const done = (text: string): ModelResponse => ({ text, toolCalls: [] })
const transient = () => new ToolError('upstream_error', 'the provider failed (503)', { category: 'transient', retryable: true })

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

describe('createAgent({ modelMiddleware })', () => {
  it('runs each model call through the layers in order, outermost first, around one attempt', async () => {
    const order: string[] = []
    const layer =
      (name: string): ModelMiddleware =>
      async (ctx, next) => {
        order.push(`${name}>${ctx.turn}:${ctx.attempt}`)
        await next()
        order.push(`${name}<${ctx.response?.text ?? 'calls'}`)
      }
    const m = model([callEcho, done('ok')])
    const agent = createAgent({ model: m, tools: [echo], modelMiddleware: [layer('outer'), layer('inner')] })
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    expect(order).toEqual(['outer>1:1', 'inner>1:1', 'inner<calls', 'outer<calls', 'outer>2:1', 'inner>2:1', 'inner<ok', 'outer<ok'])
  })

  it('lets a layer rewrite the request and swap the model for the layers inside it', async () => {
    const primary = model([done('from primary')], 'primary')
    const spare = model([done('from spare')], 'spare')
    const events: AgentEvent[] = []
    const swap: ModelMiddleware = async (ctx, next) => {
      ctx.request = { ...ctx.request, system: 'be brief' }
      ctx.model = { name: 'spare', adapter: spare }
      await next()
    }
    const outcome = await createAgent({ model: primary, tools: [echo], modelMiddleware: swap, onEvent: (e) => events.push(e) }).run({
      input: 'go',
    })
    expect(outcome).toMatchObject({ status: 'completed', output: 'from spare' })
    expect(primary.requests).toHaveLength(0)
    expect(spare.requests[0]?.system).toBe('be brief')
    expect(events.filter((e) => e.type === 'model.call')).toMatchObject([{ model: 'spare', attempt: 1 }])
  })

  it('gives a third-party retry layer every attempt: each spends a step and emits its own model.call', async () => {
    const m = model([transient(), transient(), done('third time')])
    const events: AgentEvent[] = []
    const retryTwice: ModelMiddleware = async function retryTwice(ctx, next) {
      for (;;) {
        try {
          return await next()
        } catch (err) {
          if (ctx.attempt >= 3 || !ToolError.is(err) || !err.retryable) throw err
          ctx.attempt++
        }
      }
    }
    const agent = createAgent({ model: m, tools: [echo], modelMiddleware: [retryTwice], onEvent: (e) => events.push(e) })
    const outcome = await agent.run({ input: 'go' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'third time' })
    expect(m.requests).toHaveLength(3)
    expect(events.filter((e) => e.type === 'model.call').map((e) => (e as { attempt: number }).attempt)).toEqual([1, 2, 3])
  })

  it('does not retry on its own: without a retry layer one transient failure ends the run as model_failed', async () => {
    const m = model([transient(), done('never')])
    const outcome = await createAgent({ model: m, tools: [echo], modelMiddleware: [] }).run({ input: 'go' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('model_failed')
    expect(outcome.error.message).toBe('the model call failed after 1 attempt: the provider failed (503)')
    expect(m.requests).toHaveLength(1)
  })

  it('passes a LoopError thrown by a layer through as the run error, the same object', async () => {
    const hard = new LoopError('budget_exhausted', 'the model budget is spent')
    const refuse: ModelMiddleware = async () => {
      throw hard
    }
    const outcome = await createAgent({ model: model([done('x')]), tools: [echo], modelMiddleware: refuse }).run({ input: 'go' })
    expect(outcome.status === 'stopped' && outcome.error).toBe(hard)
  })

  it('ends as cancelled when the run is cancelled while a layer waits on a model that never answers', async () => {
    const controller = new AbortController()
    const seen: string[] = []
    const watch: ModelMiddleware = async (ctx, next) => {
      try {
        await next()
      } finally {
        seen.push(ctx.signal.aborted ? 'aborted' : 'live')
      }
    }
    const run = createAgent({ model: model(['hang']), tools: [echo], modelMiddleware: watch }).run({
      input: 'go',
      signal: controller.signal,
    })
    await vi.advanceTimersByTimeAsync(10)
    controller.abort()
    const outcome = await run
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('cancelled')
    expect(seen).toEqual(['aborted'])
  })

  it('stops the run with a clear error when a layer returns without a response and without calling next()', async () => {
    const lazy: ModelMiddleware = async () => {}
    const outcome = await createAgent({ model: model([done('x')]), tools: [echo], modelMiddleware: lazy }).run({ input: 'go' })
    expect(outcome.status === 'stopped' && outcome.error.message).toMatch(/settled without a response.*without calling next\(\)/)
  })

  it("holds model layers to the onion's next() rules: a second next() while one is pending is a usage error", async () => {
    const twice: ModelMiddleware = async function twice(_ctx, next) {
      await Promise.all([next(), next()])
    }
    const outcome = await createAgent({ model: model([done('x')]), tools: [echo], modelMiddleware: twice }).run({ input: 'go' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('model_failed')
    expect(outcome.error.cause).toBeInstanceOf(MiddlewareUsageError)
  })

  it('lets a layer answer from a cache without asking the model, spending no step', async () => {
    const m = model([done('asked')])
    const cached: ModelMiddleware = async (ctx) => {
      ctx.response = done('cached')
    }
    const outcome = await createAgent({ model: m, tools: [echo], modelMiddleware: cached }).run({ input: 'go' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'cached' })
    expect(m.requests).toHaveLength(0)
  })

  it('refuses a list with a non-function, naming the index and the fix', () => {
    expect(() => createAgent({ model: model([done('x')]), tools: [echo], modelMiddleware: [async (_c, n) => n(), null as never] })).toThrow(
      /modelMiddleware\.1.*must be a layer \(e\.g\. retry\(\)\) or a model middleware function .*got null/,
    )
    expect(() => createAgent({ model: model([done('x')]), tools: [echo], modelMiddleware: { __proto__: null } as never })).toThrow(
      OptionsError,
    )
  })

  it('refuses a model array with modelMiddleware: a spare is the fallback layer', () => {
    const chain = [model([done('a')], 'a'), model([done('b')], 'b')] as never
    expect(() => createAgent({ model: chain, tools: [echo], modelMiddleware: [] })).toThrow(
      /option model: must be one model adapter, got an array; .*fallback\(\{ models: \[b\] \}\)/,
    )
  })
})

describe('defineMiddleware with createModel', () => {
  const options = z.strictObject({ tag: z.string() })
  const tagging = defineMiddleware({
    name: '@acme/tagging',
    options,
    create: ({ tag }) =>
      async function tagTool(ctx, next) {
        await next()
        ctx.log.info({ tag }, 'tool')
      },
    createModel: ({ tag }) =>
      async function tagModel(ctx, next) {
        ctx.request = { ...ctx.request, system: `${ctx.request.system ?? ''}[${tag}]` }
        await next()
      },
  })

  it('builds a model layer from the same validated options a third-party model middleware needs', async () => {
    const m = model([done('ok')])
    const outcome = await createAgent({
      model: m,
      tools: [echo],
      system: 'sys',
      modelMiddleware: [tagging.buildModel({ tag: 'acme' })],
    }).run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    expect(m.requests[0]?.system).toBe('sys[acme]')
    expect(tagging.handles).toEqual({ tools: true, models: true })
  })

  it('rejects bad options for the model layer as it does for the tool layer, naming the option', () => {
    expect(() => tagging.buildModel({ tag: 1 })).toThrow(OptionsError)
    expect(() => tagging.buildModel({ tag: 'a', extra: true })).toThrow(/extra/)
  })

  it('says which stack a one-sided definition belongs in', () => {
    const modelOnly = defineMiddleware({ name: 'model-only', options: z.object({}), createModel: () => async (_c, n) => n() })
    const toolOnly = defineMiddleware({ name: 'tool-only', options: z.object({}), create: () => async (_c, n) => n() })
    expect(modelOnly.handles).toEqual({ tools: false, models: true })
    expect(() => modelOnly.build({})).toThrow(/wraps model calls only: list it in the model stack/)
    expect(() => toolOnly.buildModel({})).toThrow(/wraps tool calls only: list it in the tool stack/)
    expect(() => defineMiddleware({ name: 'neither', options: z.object({}) })).toThrow(/give create .*createModel .*or both/)
    expect(() => defineMiddleware({ name: 'odd', options: z.object({}), createModel: 'x' as never })).toThrow(
      /createModel must be a function/,
    )
  })

  it('names the factory when createModel returns something that is not a middleware', () => {
    const broken = defineMiddleware({ name: 'broken', options: z.object({}), createModel: () => 42 as never })
    expect(() => broken.buildModel({})).toThrow('middleware "broken": createModel() returned number, not a layer or a middleware function')
  })
})
