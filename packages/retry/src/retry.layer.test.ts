import { type AgentEvent, createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, OptionsError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { constant, retry, retryDefinition } from './index.js'

/** A read tool that answers 503 on its first call, then `fetched`. */
function flakyTool() {
  const calls = { n: 0 }
  const tool = defineTool({
    name: 'fetch_page',
    description: 'Fetches a page',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      calls.n++
      if (calls.n === 1)
        throw new ToolError('upstream_error', 'upstream answered 503', { category: 'transient', retryable: true, details: { status: 503 } })
      return 'fetched'
    },
  })
  return { tool, calls }
}

/** A model whose first attempt of each turn fails with a provider's 503; turn 1 asks for the tool, turn 2 answers. */
function flakyModel(clock: { now(): number }) {
  const asked: Array<{ turn: number; at: number }> = []
  let turn = 1
  let failedThisTurn = false
  const adapter: ModelAdapter = {
    name: 'gpt',
    async generate() {
      asked.push({ turn, at: clock.now() })
      if (!failedThisTurn) {
        failedThisTurn = true
        throw Object.assign(new Error('503 Service Unavailable'), { status: 503 })
      }
      failedThisTurn = false
      turn++
      return turn === 2 ? { toolCalls: [{ id: 'c1', name: 'fetch_page', args: {} }] } : { text: 'done', toolCalls: [] }
    },
  }
  return { adapter, asked }
}

describe('retry(): one layer for tool calls and model calls', () => {
  it('is one object with both sides, named retry', () => {
    const layer = retry()
    expect(layer.name).toBe('retry')
    expect(typeof layer.wrapToolCall).toBe('function')
    expect(typeof layer.wrapModelCall).toBe('function')
    expect(Object.isFrozen(layer)).toBe(true)
  })

  it('listed in both lists of one agent, repeats a 503 of the tool and a 503 of the model', async () => {
    const clock = manualClock()
    const { tool, calls } = flakyTool()
    const model = flakyModel(clock)
    const events: AgentEvent[] = []
    const retrying = retry({ backoff: 'constant', baseMs: 100 })
    const agent = createAgent({
      model: model.adapter,
      tools: [tool],
      clock,
      middleware: [retrying],
      modelMiddleware: [retrying],
      onEvent: (e) => events.push(e),
    })
    const run = agent.run({ input: 'go' })
    for (let i = 0; i < 10; i++) await clock.runAll()
    const outcome = await run
    expect(outcome).toMatchObject({ status: 'completed', output: 'done' })
    expect(calls.n).toBe(2)
    expect(model.asked).toEqual([
      { turn: 1, at: 0 },
      { turn: 1, at: 100 },
      { turn: 2, at: 200 },
      { turn: 2, at: 300 },
    ])
    expect(
      events.flatMap((e) => (e.type === 'model.retry' ? [[e.turn, e.attempt, e.delayMs, (e as { status?: number }).status]] : [])),
    ).toEqual([
      [1, 1, 100, 503],
      [2, 1, 100, 503],
    ])
  })

  it('keeps each kind’s defaults from one options object: a 30 s Retry-After is waited by a model call, given back by a tool call', async () => {
    const clock = manualClock()
    const pushback = () => new ToolError('rate_limited', 'HTTP 429', { category: 'transient', retryable: true, retryAfterMs: 30_000 })
    let toolCalls = 0
    const tool = defineTool({
      name: 'quota',
      description: 'Rate limited',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        toolCalls++
        throw pushback()
      },
    })
    let modelCalls = 0
    const adapter: ModelAdapter = {
      async generate() {
        modelCalls++
        if (modelCalls === 1) throw pushback()
        return modelCalls === 2 ? { toolCalls: [{ id: 'c1', name: 'quota', args: {} }] } : { text: 'done', toolCalls: [] }
      },
    }
    const retrying = retry()
    const run = createAgent({ model: adapter, tools: [tool], clock, middleware: [retrying], modelMiddleware: [retrying] }).run({
      input: 'go',
    })
    for (let i = 0; i < 10; i++) await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'done' })
    // The model waited the pushback (default up to 60 s); the tool's error went back at once (default up to capMs, 8 s).
    expect(modelCalls).toBe(3)
    expect(toolCalls).toBe(1)
    expect(clock.now()).toBe(30_000)
  })

  it('uses a backoff object for model calls too', async () => {
    const clock = manualClock()
    const model = flakyModel(clock)
    const run = createAgent({ model: model.adapter, tools: [flakyTool().tool], clock, modelMiddleware: [retry(constant(700))] }).run({
      input: 'go',
    })
    for (let i = 0; i < 10; i++) await clock.runAll()
    await run
    expect(model.asked.map((a) => a.at)).toEqual([0, 700, 700, 1400])
  })

  it('refuses an unknown option, naming it', () => {
    expect(() => retry({ maxAttemps: 3 } as never)).toThrow(OptionsError)
    expect(() => retry({ maxAttemps: 3 } as never)).toThrow('retry(): unknown option "maxAttemps"')
    expect(() => retry({ modelMaxAttempts: 3 } as never)).toThrow('unknown option "modelMaxAttempts"')
  })

  it.each([
    [{ maxAttempts: Number.NaN }, 'maxAttempts'],
    [{ baseMs: Number.POSITIVE_INFINITY }, 'baseMs'],
    [{ capMs: -1 }, 'capMs'],
    [{ maxRetryAfterMs: Number.NaN }, 'maxRetryAfterMs'],
    [{ maxElapsedMs: -5 }, 'maxElapsedMs'],
    [{ retryBudgetCosts: { retry: Number.POSITIVE_INFINITY } }, 'retryBudgetCosts.retry'],
    [JSON.parse('{"__proto__": {"maxAttempts": 9}}'), '__proto__'],
    [{ hookTimeoutMs: -1 }, 'hookTimeoutMs'],
  ])('refuses hostile options %j with an error naming the option', (options, named) => {
    expect(() => retry(options as never)).toThrow(OptionsError)
    expect(() => retry(options as never)).toThrow(named)
  })
})

describe('retryDefinition: one create, both kinds of call', () => {
  it('declares both, and builds each side from the same checked policy', () => {
    expect(retryDefinition.handles).toEqual({ tools: true, models: true })
    expect(retryDefinition).not.toHaveProperty('createModel', expect.any(Function))
    expect(retryDefinition.build({ maxAttempts: 2 })).toBeTypeOf('function')
    expect(retryDefinition.buildModel({ maxAttempts: 2 })).toBeTypeOf('function')
    expect(() => retryDefinition.buildModel({ maxAttempts: 0 })).toThrow('option maxAttempts')
    expect(() => retryDefinition.build({ onRetry: () => {} })).toThrow('unknown option "onRetry"')
  })
})
