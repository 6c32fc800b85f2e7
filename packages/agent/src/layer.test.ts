import {
  createStack,
  defineMiddleware,
  defineTool,
  isLayer,
  type Layer,
  type ModelAdapter,
  modelSideOf,
  OptionsError,
  toolSideOf,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent } from './agent.js'

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({ x: z.string() }), effect: 'read', execute: ({ x }) => x })

/** A layer that records which kind of call it wrapped, in order. */
function recorder(seen: string[]): Layer {
  return {
    name: 'recorder',
    async wrapToolCall(ctx, next) {
      seen.push(`tool:${ctx.call.name}`)
      await next()
    },
    async wrapModelCall(ctx, next) {
      seen.push(`model:${ctx.turn}`)
      await next()
    },
  }
}

function model(): ModelAdapter {
  let turn = 0
  return {
    name: 'm',
    async generate() {
      turn += 1
      return turn === 1 ? { toolCalls: [{ id: 'c1', name: 'echo', args: { x: 'hi' } }] } : { text: 'done', toolCalls: [] }
    },
  }
}

describe('a layer serves the tool list and the model list', () => {
  it('wraps tool calls where listed as middleware and model calls where listed as modelMiddleware, in call order', async () => {
    const seen: string[] = []
    const layer = recorder(seen)
    const agent = createAgent({ model: model(), tools: [echo], middleware: [layer], modelMiddleware: [layer] })
    const outcome = await agent.run({ input: 'go' })
    expect(outcome.status).toBe('completed')
    expect(seen).toEqual(['model:1', 'tool:echo', 'model:2'])
  })

  it('takes one side only from the list it sits in', async () => {
    const seen: string[] = []
    const agent = createAgent({ model: model(), tools: [echo], middleware: [recorder(seen)] })
    await agent.run({ input: 'go' })
    expect(seen).toEqual(['tool:echo'])
  })

  it('refuses a layer of model calls only in the tool list, and one of tool calls only in the model list, naming the fix', () => {
    const modelOnly: Layer = { name: 'trim', wrapModelCall: async (_ctx, next) => next() }
    const toolOnly: Layer = { name: 'audit', wrapToolCall: async (_ctx, next) => next() }
    expect(() => createStack({ tools: [echo], middleware: [toolOnly, modelOnly] })).toThrow(
      new TypeError('middleware[1]: layer "trim" wraps model calls only; list it with the model layers (modelMiddleware)'),
    )
    expect(() => createAgent({ model: model(), tools: [echo], modelMiddleware: [toolOnly] })).toThrow(OptionsError)
    expect(() => createAgent({ model: model(), tools: [echo], modelMiddleware: [toolOnly] })).toThrow(
      /modelMiddleware\.0.*layer "audit" wraps tool calls only; list it with the tool layers \(middleware\)/,
    )
  })

  it('refuses what is neither a layer nor a function: null, a bare object, a name without a side, __proto__ tricks', () => {
    for (const bad of [null, 42, {}, { name: 'x' }, { name: 1, wrapToolCall: () => {} }, JSON.parse('{"__proto__":{"name":"x"}}')]) {
      expect(isLayer(bad)).toBe(false)
      expect(() => toolSideOf(bad, 'middleware[0]')).toThrow(
        /middleware\[0\]: must be a layer \(e\.g\. retry\(\)\) or a middleware function/,
      )
      expect(() => modelSideOf(bad, 'modelMiddleware[0]')).toThrow(/modelMiddleware\[0\]: must be a layer/)
    }
  })

  it('swaps in layers with stack.setMiddleware', async () => {
    const seen: string[] = []
    const stack = createStack({ tools: [echo] })
    stack.setMiddleware([recorder(seen)])
    const agent = createAgent({ model: model(), stack })
    await agent.run({ input: 'go' })
    expect(seen).toEqual(['tool:echo'])
  })
})

describe('a definition whose create returns a layer', () => {
  const definition = defineMiddleware({
    name: '@acme/count',
    options: z.strictObject({ by: z.number().default(1) }),
    handles: { tools: true, models: true },
    create: ({ by }): Layer => ({
      name: '@acme/count',
      wrapToolCall: Object.assign(async (_ctx: unknown, next: () => Promise<void>) => next(), { by }),
      wrapModelCall: Object.assign(async (_ctx: unknown, next: () => Promise<void>) => next(), { by: -by }),
    }),
  })

  it('builds the tool side for the tool list and the model side for the model list, from the same checked options', () => {
    expect(definition.handles).toEqual({ tools: true, models: true })
    expect((definition.build({ by: 2 }) as unknown as { by: number }).by).toBe(2)
    expect((definition.buildModel({ by: 2 }) as unknown as { by: number }).by).toBe(-2)
    expect(() => definition.build({ by: 'x' })).toThrow(OptionsError)
  })

  it('refuses the model list for a layer that has no model side, with the fix', () => {
    const toolsOnly = defineMiddleware({
      name: 'tools-only',
      options: z.object({}),
      create: (): Layer => ({ name: 'tools-only', wrapToolCall: async (_ctx, next) => next() }),
    })
    expect(toolsOnly.handles).toEqual({ tools: true, models: false })
    expect(() => toolsOnly.buildModel({})).toThrow('middleware "tools-only" wraps tool calls only')
  })
})
