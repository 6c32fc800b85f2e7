import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, type ModelMiddleware, OptionsError, ToolError } from '@shallot/core'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel, otelDefinition } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

/** Repeats next() once after a failure, bumping the attempt: the shape of a retry layer. */
const retryOnce: ModelMiddleware = async (ctx, next) => {
  try {
    await next()
  } catch {
    ctx.attempt++
    await next()
  }
}

describe('otel(): one layer for tool calls and model calls', () => {
  it('is one frozen object with both sides, attach and onAgentEvent, named otel', () => {
    const layer = otel()
    expect(layer.name).toBe('otel')
    expect(typeof layer.wrapToolCall).toBe('function')
    expect(typeof layer.wrapModelCall).toBe('function')
    expect(typeof layer.attach).toBe('function')
    expect(typeof layer.onAgentEvent.within).toBe('function')
    expect(layer).not.toHaveProperty('model')
    expect(Object.isFrozen(layer)).toBe(true)
  })

  it('listed in both lists of one agent, traces a tool call that failed with a 503 and a model call that did, under one run span', async () => {
    sdk = otelSdk()
    let toolCalls = 0
    const fetchPage = defineTool({
      name: 'fetch_page',
      description: 'Fetches a page',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        toolCalls++
        throw new ToolError('upstream_error', 'upstream answered 503', { category: 'transient', retryable: true })
      },
    })
    let asked = 0
    const model: ModelAdapter = {
      name: 'gpt-4o-mini',
      async generate() {
        asked++
        if (asked === 1) throw Object.assign(new Error('503 Service Unavailable'), { status: 503 })
        return asked === 2 ? { toolCalls: [{ id: 'c1', name: 'fetch_page', args: {} }] } : { text: 'done', toolCalls: [] }
      },
    }
    const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
    const agent = createAgent({
      model,
      tools: [fetchPage],
      middleware: [tracing],
      modelMiddleware: [tracing, retryOnce],
      onEvent: tracing.onAgentEvent,
    })
    tracing.attach(agent.stack)
    expect(await agent.run({ input: 'go' })).toMatchObject({ status: 'completed', output: 'done' })
    const spans = sdk.spans()
    const run = spans.find((s) => s.name.startsWith('invoke_agent'))
    const tools = spans.filter((s) => s.name === 'execute_tool fetch_page')
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini')
    expect(toolCalls).toBe(1)
    expect(tools).toHaveLength(1)
    expect(tools[0]?.attributes['error.type']).toBe('upstream_error')
    // The model side is outside retryOnce: one span per logical model call, the 503 and its repeat inside the first.
    expect(chats).toHaveLength(2)
    for (const span of [...tools, ...chats]) expect(span.parentSpanContext?.spanId).toBe(run?.spanContext().spanId)
  })

  it('refuses an unknown option, naming it', () => {
    expect(() => otel({ tracerProvider: {} } as never)).toThrow(OptionsError)
    expect(() => otel({ tracerProvider: {} } as never)).toThrow(/otel\(\).*unknown option "tracerProvider"/)
  })

  it.each([
    [{ tracer: Number.NaN }, 'tracer'],
    [{ meter: Number.POSITIVE_INFINITY }, 'meter'],
    [{ secrets: [-1] }, 'secrets'],
    [{ secrets: 'sk-live' }, 'secrets'],
    [JSON.parse('{"__proto__": {"secrets": []}}'), '__proto__'],
  ])('refuses hostile options %j with an error naming the option', (options, named) => {
    expect(() => otel(options as never)).toThrow(OptionsError)
    expect(() => otel(options as never)).toThrow(named)
  })
})

describe('otelDefinition: one create, both kinds of call', () => {
  it('declares both, and builds each side from the same checked options', () => {
    expect(otelDefinition.handles).toEqual({ tools: true, models: true })
    expect(otelDefinition.build({})).toBeTypeOf('function')
    expect(otelDefinition.buildModel({ secrets: ['sk-test'] })).toBeTypeOf('function')
    expect(() => otelDefinition.buildModel({ secrets: [''] })).toThrow(/secrets/)
  })
})
