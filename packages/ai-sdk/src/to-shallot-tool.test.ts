import { createAgent } from '@shallot/agent'
import { createStack, OptionsError, silentLogger, type ToolExecuteContext } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { jsonSchema, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotTools, toShallotTool, toShallotTools } from './index.js'

const refundTool = () =>
  tool({
    description: 'Refund a payment',
    inputSchema: z.object({ payment: z.string() }),
    execute: async ({ payment }) => ({ refund: `re_${payment}` }),
  })
const reconcileContext: ToolExecuteContext = {
  call: { id: 'c1', name: 'refund', args: {} },
  signal: new AbortController().signal,
  idempotencyKey: 'k-1',
  attempt: 1,
  log: silentLogger,
}

describe('toShallotTool(s): the rest of a defineTool spec', () => {
  it("takes a reconcile beside the effect: the shallot tool's reconcile asks it with the arguments and the key", async () => {
    const heard: unknown[] = []
    const refund = toShallotTool('refund', refundTool(), {
      effect: 'write',
      reconcile: async ({ payment }, { idempotencyKey }) => {
        heard.push([payment, idempotencyKey])
        return { status: 'applied', result: { refund: 're_found' } }
      },
    })
    expect(await refund.reconcile?.({ payment: 'pay_1' }, reconcileContext)).toEqual({ status: 'applied', result: { refund: 're_found' } })
    expect(heard).toEqual([['pay_1', 'k-1']])
  })

  it('toShallotTools and shallotTools take reconcile per tool name, and refuse a name that is not a tool', async () => {
    const reconcile = async () => ({ status: 'not_applied' as const })
    const [viaTools] = toShallotTools({ refund: refundTool() }, { reconcile: { refund: reconcile } })
    expect(await viaTools?.reconcile?.({ payment: 'pay_1' }, reconcileContext)).toEqual({ status: 'not_applied' })
    const set = shallotTools({ refund: refundTool() }, { reconcile: { refund: reconcile } })
    expect(await set.stack.tools.get('refund')?.reconcile?.({ payment: 'pay_1' }, reconcileContext)).toEqual({ status: 'not_applied' })
    expect(() => toShallotTools({ refund: refundTool() }, { reconcile: { refnud: reconcile } })).toThrow(
      'toShallotTools(): reconcile names "refnud", which is not one of the tools (refund)',
    )
  })

  it('refuses a field it would not use, naming it and the ones it knows, instead of dropping it', () => {
    expect(() => toShallotTool('refund', refundTool(), { effect: 'write', reconciler: () => {} } as never)).toThrow(OptionsError)
    expect(() => toShallotTool('refund', refundTool(), { effect: 'write', reconciler: () => {} } as never)).toThrow(
      `toShallotTool("refund"): unknown option "reconciler"; did you mean 'reconcile'?`,
    )
    expect(() => toShallotTool('refund', refundTool(), { retries: 3 } as never)).toThrow(
      'toShallotTool("refund"): unknown option "retries"; known options: effect, reconcile',
    )
  })
})

describe('toShallotTool', () => {
  it('keeps name, description and a zod input schema, and defaults the effect to write', () => {
    const input = z.object({ q: z.string() })
    const search = toShallotTool('search', tool({ description: 'Search the docs', inputSchema: input, execute: async ({ q }) => q }))
    expect(search).toMatchObject({ name: 'search', description: 'Search the docs', effect: 'write' })
    expect(search.input).toBe(input)
  })

  it("runs a schema's own validate function and reports its message as invalid_arguments", async () => {
    const even = jsonSchema<{ n: number }>(
      { type: 'object', properties: { n: { type: 'number' } } },
      {
        validate: (value) => {
          const n = (value as { n?: unknown }).n
          return typeof n === 'number' && n % 2 === 0
            ? { success: true, value: { n } }
            : { success: false, error: new Error('n must be even') }
        },
      },
    )
    const half = toShallotTool('half', tool({ inputSchema: even, execute: async ({ n }) => n / 2 }), { effect: 'read' })
    const stack = createStack({ tools: [half] })
    const bad = await stack.dispatch({ id: 'c1', name: 'half', args: { n: 3 } })
    const good = await stack.dispatch({ id: 'c2', name: 'half', args: { n: 4 } })
    expect(bad.error).toMatchObject({ code: 'invalid_arguments', message: 'Invalid arguments for half: (root): n must be even' })
    expect(good).toMatchObject({ ok: true, value: 2 })
  })

  it("hands the call's signal to execute and resolves a streaming execute to its last value", async () => {
    let seen: AbortSignal | undefined
    const progress = tool({
      inputSchema: z.object({}),
      async *execute(_input, { abortSignal }) {
        seen = abortSignal
        yield 'started'
        yield 'finished'
      },
    })
    const stack = createStack({ tools: [toShallotTool('progress', progress)] })
    const result = await stack.dispatch({ id: 'c1', name: 'progress', args: {} })
    expect(result).toMatchObject({ ok: true, value: 'finished' })
    expect(seen).toBeInstanceOf(AbortSignal)
  })

  it('refuses a tool without execute, and effects for tools that do not exist', () => {
    expect(() => toShallotTool('client_side', tool({ inputSchema: z.object({}), outputSchema: z.string() }))).toThrow(
      'the tool has no execute function',
    )
    const tools = { a: tool({ inputSchema: z.object({}), execute: async () => 1 }) }
    expect(() => toShallotTools(tools, { effects: { b: 'read' } })).toThrow('effects names "b", which is not one of the tools (a)')
  })

  it("puts AI SDK tools behind shallot's own agent loop", async () => {
    const weather = tool({
      description: 'Weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => `sunny in ${city}`,
    })
    const model = scriptedModel([
      { toolCalls: [{ name: 'weather', args: { city: 'Lyon' } }] },
      ({ lastResults }) => ({ text: lastResults[0]?.content ?? '' }),
    ])
    const agent = createAgent({ model, tools: toShallotTools({ weather }, { effects: { weather: 'read' } }) })
    const outcome = await agent.run({ input: 'Weather in Lyon?' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'sunny in Lyon' })
  })
})

describe('shallotTools options', () => {
  const tools = { a: tool({ inputSchema: z.object({}), execute: async () => 1 }) }

  it('names the option and the value it got', () => {
    expect(() => shallotTools(tools, { maxSteps: 0 })).toThrow(OptionsError)
    expect(() => shallotTools(tools, { maxSteps: 0 })).toThrow('option maxSteps')
  })

  it('takes the step budget as limits.maxSteps, like createAgent, and refuses a bad or doubled one', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '5']) {
      expect(() => shallotTools(tools, { limits: { maxSteps: bad as number } })).toThrow('option limits.maxSteps')
    }
    expect(() => shallotTools(tools, { limits: { maxSteps: 5 }, maxSteps: 5 })).toThrow(/deprecated spelling of limits.maxSteps/)
    expect(() => shallotTools(tools, { limits: { maxSteps: 5 } })).not.toThrow()
  })

  it('refuses stack options next to a ready stack, and a stack that lacks one of the tools', () => {
    const stack = createStack({ tools: toShallotTools(tools) })
    expect(() => shallotTools(tools, { stack, middleware: [] })).toThrow('option middleware: belongs to the stack')
    const other = createStack({ tools: [] })
    expect(() => shallotTools(tools, { stack: other })).toThrow('the stack has no tool named "a"')
    expect(shallotTools(tools, { stack }).stack).toBe(stack)
  })

  it('leaves tools without execute untouched', () => {
    const clientSide = tool({ inputSchema: z.object({}), outputSchema: z.string() })
    expect(shallotTools({ ...tools, client_side: clientSide }).tools.client_side).toBe(clientSide)
  })
})
