import { type AgentEvent, createAgent } from '@shallot/agent'
import { createStack, defineTool, type ModelAdapter, OptionsError, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive } from './index.js'

const down = () => new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })

function searchTool() {
  let requests = 0
  const tool = defineTool({
    name: 'search',
    description: 'Search the docs',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      requests++
      throw down()
    },
  })
  return { tool, requests: () => requests }
}

describe('circuitBreaker(): one layer, listed in both lists of one agent', () => {
  it('its tool side opens the tool’s circuit and its model side the model’s, each counting only its own calls', async () => {
    const clock = manualClock()
    const search = searchTool()
    const ask = (q: string) => ({ toolCalls: [{ name: 'search', args: { q } }] })
    const tools = scriptedModel([ask('a'), ask('b'), ask('c'), ({ lastResults }) => ({ text: String(lastResults[0]?.content) })])
    let modelUp = true
    const model: ModelAdapter = {
      name: 'gpt',
      generate: (request) => (modelUp ? tools.generate(request) : Promise.reject(down())),
    }
    const events: AgentEvent[] = []
    const breaker = circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 10_000 })
    const agent = createAgent({
      model,
      tools: [search.tool],
      clock,
      middleware: [breaker],
      modelMiddleware: [breaker],
      onEvent: (e) => e.type === 'model.circuit' && events.push(e),
    })

    // Tool side, as circuitBreaker() did: two failures, then a soft circuit_open without a third request.
    const first = await agent.run({ input: 'look it up' })
    expect(first).toMatchObject({ status: 'completed', output: expect.stringContaining("tool 'search' temporarily unavailable") })
    expect(search.requests()).toBe(2)
    // The model answered four times meanwhile: its circuit never moved.
    expect(events).toEqual([])

    // Model side, as circuitBreakerModel() did: two failed requests open gpt's circuit; the next run asks nothing.
    modelUp = false
    await agent.run({ input: 'again' })
    await agent.run({ input: 'again' })
    expect(events.map((e) => e.type === 'model.circuit' && [e.model, e.from, e.to])).toEqual([['gpt', 'closed', 'open']])
    const fast = await agent.run({ input: 'again' })
    expect(fast.status === 'stopped' && fast.error.message).toMatch(/model 'gpt' skipped: circuit open after 2 failures/)
    expect(tools.requests).toHaveLength(4)
  })

  it('is one frozen object with both sides, built once: two lists share the layer, not a copy', () => {
    const breaker = circuitBreaker()
    expect(breaker).toMatchObject({ name: 'circuit-breaker', wrapToolCall: expect.any(Function), wrapModelCall: expect.any(Function) })
    expect(Object.isFrozen(breaker)).toBe(true)
    expect(breaker.wrapToolCall).toBe(breaker.wrapToolCall)
  })
})

describe('circuitBreaker(): options', () => {
  it.each([
    [{ modelKey: () => 'gpt' }, /unknown option "modelKey"/],
    [{ cooldown: 1000 }, /unknown option "cooldown"/],
    [JSON.parse('{"__proto__": {"cooldownMs": 1}}'), /unknown option "__proto__"/],
    [{ cooldownMs: Number.NaN }, /option cooldownMs/],
    [{ cooldownMs: Number.POSITIVE_INFINITY }, /option cooldownMs/],
    [{ cooldownMs: -1 }, /option cooldownMs/],
    [{ cooldownGrowth: Number.NaN }, /option cooldownGrowth/],
    [{ maxHalfOpenMs: Number.POSITIVE_INFINITY }, /option maxHalfOpenMs/],
    [{ halfOpenProbes: -1 }, /option halfOpenProbes/],
    [{ maxKeys: 0.5 }, /option maxKeys/],
    [{ key: 'search' }, /option key/],
    [{ isFailure: true }, /option isFailure/],
  ])('refuses %j with an OptionsError naming it, for both sides at once', (options, message) => {
    expect(() => circuitBreaker(options as never)).toThrow(OptionsError)
    expect(() => circuitBreaker(options as never)).toThrow(message)
  })

  it('a key function that throws fails the call with a TypeError naming the option, on either side; the tool does not run', async () => {
    const search = searchTool()
    const key = () => {
      throw new Error('no tenant')
    }
    const breaker = circuitBreaker({ key })
    const stack = createStack({ tools: [search.tool], middleware: [breaker] })
    // Without a panic catcher, a layer's throw ends the run as a LoopError that names it.
    await expect(stack.dispatch({ id: 'c1', name: 'search', args: { q: 'x' } })).rejects.toThrow(
      /threw TypeError: circuitBreaker\(\): option key threw: no tenant/,
    )
    expect(search.requests()).toBe(0)

    const model: ModelAdapter = { name: 'gpt', generate: async () => ({ text: 'never', toolCalls: [] }) }
    const outcome = await createAgent({ model, tools: [], modelMiddleware: [breaker] }).run({ input: 'hi' })
    expect(outcome.status === 'stopped' && outcome.error.message).toMatch(/circuitBreaker\(\): option key threw: no tenant/)
  })
})
