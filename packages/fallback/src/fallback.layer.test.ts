import { type AgentEvent, createAgent } from '@shallot/agent'
import { createStack, defineTool, type ModelAdapter, OptionsError, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallback } from './index.js'

const down = () => new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })

describe('fallback(): one layer, listed in both lists of one agent', () => {
  it('its tool side answers a failed read from the cache and its model side asks the spare model', async () => {
    const clock = manualClock()
    let toolUp = true
    const statusPage = defineTool({
      name: 'status_page',
      description: 'Current status',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        if (!toolUp) throw down()
        return 'all systems go'
      },
    })
    const check = { name: 'status_page', args: {} }
    const primary = scriptedModel([
      { toolCalls: [check] },
      () => {
        toolUp = false
        return { toolCalls: [check] }
      },
      ({ lastResults }) => ({ text: String(lastResults[0]?.content) }),
    ])
    let primaryUp = true
    const gpt: ModelAdapter = { name: 'gpt', generate: (request) => (primaryUp ? primary.generate(request) : Promise.reject(down())) }
    const claude: ModelAdapter = { name: 'claude', generate: async () => ({ text: 'from claude', toolCalls: [] }) }
    const events: AgentEvent[] = []
    const layer = fallback({ tools: { status_page: { from: 'cache' } }, models: [claude] })
    const agent = createAgent({
      model: gpt,
      tools: [statusPage],
      clock,
      middleware: [layer],
      modelMiddleware: [layer],
      onEvent: (e) => e.type === 'model.fallback' && events.push(e),
    })

    // Tool side, as fallback() did: the second call fails and is answered from the first one's result.
    expect(await agent.run({ input: 'status?' })).toMatchObject({
      status: 'completed',
      output: '{"note":"cached 0 s ago","value":"all systems go"}',
    })
    expect(events).toEqual([])
    // Model side, as fallbackModel() did: gpt is down, claude answers, and a model.fallback event says so.
    primaryUp = false
    expect(await agent.run({ input: 'status?' })).toMatchObject({ status: 'completed', output: 'from claude' })
    expect(events.map((e) => e.type === 'model.fallback' && [e.from, e.to])).toEqual([['gpt', 'claude']])
  })

  it('has only the sides its options make; listed where it has no side, the host names the layer and the fix', () => {
    const claude: ModelAdapter = { name: 'claude', generate: async () => ({ text: '', toolCalls: [] }) }
    const models = fallback({ models: [claude] })
    expect(models.wrapToolCall).toBeUndefined()
    expect(typeof models.wrapModelCall).toBe('function')
    expect(() => createStack({ tools: [], middleware: [models] })).toThrow(/layer "fallback" wraps model calls only/)

    const tools = fallback({ default: { from: 'cache' } })
    expect(tools.wrapModelCall).toBeUndefined()
    expect(() => createAgent({ model: claude, tools: [], modelMiddleware: [tools] })).toThrow(/layer "fallback" wraps tool calls only/)

    const both = fallback({ default: { from: 'cache' }, models: [claude] })
    expect([typeof both.wrapToolCall, typeof both.wrapModelCall]).toEqual(['function', 'function'])
    // No options at all: a tool side that answers nothing, as fallback() always was.
    expect(typeof fallback().wrapToolCall).toBe('function')
    expect(Object.isFrozen(both)).toBe(true)
  })
})

describe('fallback(): options', () => {
  const claude: ModelAdapter = { name: 'claude', generate: async () => ({ text: '', toolCalls: [] }) }

  it.each([
    [{ model: [claude] }, /unknown option "model"/],
    [{ models: [claude], retries: 2 }, /unknown option "retries"/],
    [JSON.parse('{"__proto__": {"tools": {}}}'), /unknown option "__proto__"/],
    [{ default: { from: 'cache' }, cacheMaxAgeMs: Number.NaN }, /option cacheMaxAgeMs/],
    [{ default: { from: 'cache' }, cacheMaxAgeMs: Number.POSITIVE_INFINITY }, /option cacheMaxAgeMs/],
    [{ default: { from: 'cache' }, maxCacheEntries: -1 }, /option maxCacheEntries/],
    [{ default: { from: 'value', value: Number.POSITIVE_INFINITY } }, /option default/],
    [{ models: [] }, /option models/],
    [{ models: Array.from({ length: 11 }, (_, i) => ({ ...claude, name: `m${i}` })) }, /option models/],
    [{ models: [claude], on: ['timeout'] }, /option on: applies to tool calls only/],
    [{ models: [claude], cacheMaxAgeMs: 1000 }, /option cacheMaxAgeMs: applies to tool calls only/],
    [{ models: [claude], dispatch: () => Promise.reject() }, /option dispatch: applies to tool calls only/],
    [{ default: { from: 'cache' }, resolveModel: () => claude }, /option resolveModel: applies to model calls only/],
  ])('refuses %j with an OptionsError naming it', (options, message) => {
    expect(() => fallback(options as never)).toThrow(OptionsError)
    expect(() => fallback(options as never)).toThrow(message)
  })

  it('a resolveModel that throws is refused at construction naming the spare', () => {
    const resolveModel = () => {
      throw new Error('no key')
    }
    expect(() => fallback({ models: ['openai:gpt-4o'], resolveModel })).toThrow(
      /option models\[0\]: resolveModel\('openai:gpt-4o'\) threw: no key/,
    )
  })
})
