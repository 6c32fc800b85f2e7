import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, OptionsError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { DEFAULT_MODEL_TIMEOUT_MS, timeout, timeoutDefinition } from './index.js'

describe('timeout(): one layer for tool calls and model calls', () => {
  it('is one frozen object with both sides, named timeout', () => {
    const layer = timeout()
    expect(layer.name).toBe('timeout')
    expect(typeof layer.wrapToolCall).toBe('function')
    expect(typeof layer.wrapModelCall).toBe('function')
    expect(Object.isFrozen(layer)).toBe(true)
  })

  it('listed in both lists of one agent: a hung tool attempt and a hung model attempt are each cut at their own deadline', async () => {
    const clock = manualClock()
    const fetchPage = defineTool({
      name: 'fetch_page',
      description: 'Fetches a page',
      input: z.object({}),
      effect: 'read',
      execute: () => new Promise<never>(() => {}),
    })
    const asked: number[] = []
    const toolResults: string[] = []
    const model: ModelAdapter = {
      name: 'gpt',
      generate: ({ messages }) => {
        asked.push(clock.now())
        if (asked.length === 1) return Promise.resolve({ toolCalls: [{ id: 'c1', name: 'fetch_page', args: {} }] })
        toolResults.push(String(messages.at(-1)?.content))
        return new Promise<never>(() => {})
      },
    }
    const deadline = timeout({ ms: 1_000, models: { gpt: 3_000 } })
    const run = createAgent({ model, tools: [fetchPage], clock, middleware: [deadline], modelMiddleware: [deadline] }).run({ input: 'go' })
    for (let i = 0; i < 5; i++) await clock.runAll()
    // The tool attempt was cut at 1 s (the model read the timeout), the second model attempt at its own 3 s.
    expect(asked).toEqual([0, 1_000])
    expect(toolResults).toEqual([expect.stringContaining("Tool 'fetch_page' timed out after 1s")])
    expect(await run).toMatchObject({ status: 'stopped', error: { details: { failure: 'the model did not answer within 3000 ms' } } })
    expect(clock.now()).toBe(4_000)
  })

  it('keeps each kind’s default deadline when no ms is given: 30 s for a tool attempt, 60 s for a model attempt', async () => {
    const hanging: ModelAdapter = { generate: () => new Promise<never>(() => {}) }
    const clock = manualClock()
    const run = createAgent({ model: hanging, tools: [], clock, modelMiddleware: [timeout()] }).run({ input: 'go' })
    await clock.runAll()
    expect(await run).toMatchObject({
      status: 'stopped',
      error: { details: { failure: `the model did not answer within ${DEFAULT_MODEL_TIMEOUT_MS} ms` } },
    })
    expect(clock.now()).toBe(60_000)

    const toolClock = manualClock()
    const stuck = defineTool({
      name: 'stuck',
      description: 'Hangs',
      input: z.object({}),
      effect: 'read',
      execute: () => new Promise(() => {}),
    })
    let turn = 0
    const asks: ModelAdapter = {
      generate: async ({ messages }) =>
        ++turn === 1 ? { toolCalls: [{ id: 'c1', name: 'stuck', args: {} }] } : { text: String(messages.at(-1)?.content), toolCalls: [] },
    }
    const toolRun = createAgent({ model: asks, tools: [stuck], clock: toolClock, middleware: [timeout()] }).run({ input: 'go' })
    await toolClock.runAll()
    expect(await toolRun).toMatchObject({ status: 'completed', output: expect.stringContaining('timed out after 30s') })
    expect(toolClock.now()).toBe(30_000)
  })

  it('refuses an unknown option, naming it', () => {
    expect(() => timeout({ millis: 5 } as never)).toThrow(OptionsError)
    expect(() => timeout({ millis: 5 } as never)).toThrow('timeout(): unknown option "millis"')
    expect(() => timeout({ modelMs: 5 } as never)).toThrow('unknown option "modelMs"')
  })

  it.each([
    [{ ms: Number.NaN }, 'option ms'],
    [{ ms: Number.POSITIVE_INFINITY }, 'option ms'],
    [{ ms: -1 }, 'option ms'],
    [{ tools: { search: Number.NaN } }, 'option tools.search'],
    [{ models: { gpt: Number.POSITIVE_INFINITY } }, 'option models.gpt'],
    [{ models: { gpt: -5 } }, 'option models.gpt'],
    [JSON.parse('{"__proto__": {"ms": 5}}'), 'unknown option "__proto__"'],
  ])('refuses hostile options %j with an error naming the option', (options, named) => {
    expect(() => timeout(options as never)).toThrow(OptionsError)
    expect(() => timeout(options as never)).toThrow(named)
  })
})

describe('timeoutDefinition: one create, both kinds of call', () => {
  it('declares both, and builds each side from the same checked options', () => {
    expect(timeoutDefinition.handles).toEqual({ tools: true, models: true })
    expect(timeoutDefinition.build({ ms: 1000 })).toBeTypeOf('function')
    expect(timeoutDefinition.buildModel({ ms: 1000 })).toBeTypeOf('function')
    expect(() => timeoutDefinition.buildModel({ ms: 0 })).toThrow('option ms')
  })
})
