import { createAgent } from '@shallot/agent'
import { createStack, defineTool, type Message, type ModelAdapter, OptionsError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { tooLong } from './ask.test-helper.js'
import { contextEditing, contextEditingDefinition } from './index.js'

const read = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ path: z.string() }),
  effect: 'read',
  execute: ({ path }) => `contents of ${path}`,
})

describe('contextEditing(): a layer of model calls only', () => {
  it('is one frozen object with a model side and no tool side, named context-editing', () => {
    const layer = contextEditing()
    expect(layer.name).toBe('context-editing')
    expect(typeof layer.wrapModelCall).toBe('function')
    expect(layer).not.toHaveProperty('wrapToolCall')
    expect(Object.isFrozen(layer)).toBe(true)
  })

  it('in modelMiddleware: a request the provider refused as too long is shortened and asked once more', async () => {
    const asked: Message[][] = []
    const model: ModelAdapter = {
      async generate({ messages }) {
        asked.push([...messages])
        if (asked.length <= 3) return { toolCalls: [{ id: `c${asked.length}`, name: 'read_file', args: { path: `f${asked.length}` } }] }
        if (asked.length === 4) throw tooLong()
        return { text: 'done', toolCalls: [] }
      },
    }
    const outcome = await createAgent({ model, tools: [read], modelMiddleware: [contextEditing({ keep: 1 })] }).run({ input: 'go' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'done' })
    const retried = asked[4] ?? []
    expect(retried.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['[cleared]', '[cleared]', 'contents of f3'])
  })

  it('in the tool list it is refused, naming the fix', () => {
    expect(() => createStack({ tools: [read], middleware: [contextEditing()] })).toThrow(
      'middleware[0]: layer "context-editing" wraps model calls only; list it with the model layers (modelMiddleware)',
    )
  })

  it('refuses an unknown option, naming it', () => {
    expect(() => contextEditing({ maxTokens: 5 } as never)).toThrow(OptionsError)
    expect(() => contextEditing({ maxTokens: 5 } as never)).toThrow('contextEditing(): unknown option "maxTokens"')
  })

  it.each([
    [{ maxInputTokens: Number.NaN }, 'option maxInputTokens'],
    [{ maxInputTokens: Number.POSITIVE_INFINITY }, 'option maxInputTokens'],
    [{ keep: -1 }, 'option keep'],
    [{ charsPerToken: Number.NaN }, 'option charsPerToken'],
    [{ models: { gpt: -3 } }, 'option models.gpt'],
    [JSON.parse('{"__proto__": {"keep": 0}}'), 'unknown option "__proto__"'],
  ])('refuses hostile options %j with an error naming the option', (options, named) => {
    expect(() => contextEditing(options as never)).toThrow(OptionsError)
    expect(() => contextEditing(options as never)).toThrow(named)
  })
})

describe('contextEditingDefinition: one create, model calls only', () => {
  it('declares model calls only; buildModel gives the model side and build refuses with the fix', () => {
    expect(contextEditingDefinition.handles).toEqual({ tools: false, models: true })
    expect(contextEditingDefinition.buildModel({ keep: 3 })).toBeTypeOf('function')
    expect(() => contextEditingDefinition.build({ keep: 3 })).toThrow(/context-editing.*model calls only/)
    expect(() => contextEditingDefinition.buildModel({ keep: -1 })).toThrow('option keep')
  })
})
