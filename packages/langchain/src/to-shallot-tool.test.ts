import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { DynamicStructuredTool } from '@langchain/core/tools'
import { createStack, LoopError, OptionsError, type Stack, silentLogger } from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { createAgent, tool } from 'langchain'
import { fallback } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopErrorOf, shallotMiddleware, toShallotTool } from './index.js'

describe('toShallotTool', () => {
  it('runs a LangChain tool through a plain stack with its zod schema', async () => {
    let seen: AbortSignal | undefined
    const weather = tool(
      async ({ city }, config) => {
        seen = config?.signal
        return `sunny in ${city}`
      },
      { name: 'weather', description: 'Weather in a city', schema: z.object({ city: z.string() }) },
    )
    const shallotTool = toShallotTool(weather, { effect: 'read' })
    expect(shallotTool).toMatchObject({ name: 'weather', description: 'Weather in a city', effect: 'read' })
    const stack = createStack({ tools: [shallotTool] })
    expect(await stack.dispatch({ id: 'c1', name: 'weather', args: { city: 'Lyon' } })).toMatchObject({ ok: true, value: 'sunny in Lyon' })
    expect(seen).toBeInstanceOf(AbortSignal)
    expect((await stack.dispatch({ id: 'c2', name: 'weather', args: { town: 'Lyon' } })).error?.code).toBe('invalid_arguments')
  })

  it('validates a tool described by a JSON Schema', async () => {
    const add = new DynamicStructuredTool({
      name: 'add',
      description: 'Add two numbers',
      schema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      func: async (input: { a: number; b: number }) => String(input.a + input.b),
    })
    const stack = createStack({ tools: [toShallotTool(add)] })
    expect(await stack.dispatch({ id: 'c1', name: 'add', args: { a: 1, b: 2 } })).toMatchObject({ ok: true, value: '3' })
    expect((await stack.dispatch({ id: 'c2', name: 'add', args: { a: 1 } })).error).toMatchObject({
      code: 'invalid_arguments',
      hint: 'expected { a: number, b: number }',
    })
  })

  it("turns a ToolMessage with status 'error' into a soft tool_error", async () => {
    const refuse = tool(async () => new ToolMessage({ content: 'quota used up', tool_call_id: 'x', status: 'error' }), {
      name: 'refuse',
      description: 'Always refuses',
      schema: z.object({}),
    })
    const stack = createStack({ tools: [toShallotTool(refuse)] })
    expect((await stack.dispatch({ id: 'c1', name: 'refuse', args: {} })).error).toMatchObject({
      code: 'tool_error',
      message: 'quota used up',
      retryable: false,
    })
  })
})

describe('loopErrorOf', () => {
  it("finds the LoopError in a wrapper's cause chain, and nothing in other errors", () => {
    const hard = new LoopError('loop_detected', 'read_file failed 5 times')
    expect(loopErrorOf(new Error('wrapped', { cause: new Error('again', { cause: hard }) }))).toBe(hard)
    expect(loopErrorOf(hard)).toBe(hard)
    expect(loopErrorOf(new Error('plain'))).toBeUndefined()
    expect(loopErrorOf(undefined)).toBeUndefined()
  })
})

describe('toShallotTool: the rest of a defineTool spec', () => {
  const refund = tool(async ({ payment }) => `re_${payment}`, {
    name: 'refund_payment',
    description: 'Refund a payment',
    schema: z.object({ payment: z.string() }),
  })
  const context = {
    call: { id: 'c1', name: 'refund_payment', args: {} },
    signal: new AbortController().signal,
    idempotencyKey: 'k-1',
    attempt: 1,
    log: silentLogger,
  }

  it("takes a reconcile beside the effect: the shallot tool's reconcile asks it with the arguments and the key", async () => {
    const heard: unknown[] = []
    const shallotTool = toShallotTool(refund, {
      effect: 'write',
      reconcile: async ({ payment }: { payment: string }, { idempotencyKey }) => {
        heard.push([payment, idempotencyKey])
        return { status: 'applied', result: `re_found_${payment}` }
      },
    })
    expect(await shallotTool.reconcile?.({ payment: 'pay_1' }, context)).toEqual({ status: 'applied', result: 're_found_pay_1' })
    expect(heard).toEqual([['pay_1', 'k-1']])
  })

  it('refuses a field it would not use, naming it and the ones it knows, instead of dropping it', () => {
    expect(() => toShallotTool(refund, { effect: 'write', retries: 3 } as never)).toThrow(
      'toShallotTool("refund_payment"): unknown option "retries"; known options: effect, reconcile',
    )
    expect(() => shallotMiddleware({ reconcile: { refund_payment: 'find it' } as never })).toThrow('option reconcile.refund_payment')
  })
})

describe('shallotMiddleware options', () => {
  it('names the option and the value it got', () => {
    expect(() => shallotMiddleware({ maxSteps: -1 })).toThrow(OptionsError)
    expect(() => shallotMiddleware({ maxRuns: 0 })).toThrow('option maxRuns')
    expect(() => shallotMiddleware({ stack: createStack({ tools: [] }), middleware: [] })).toThrow(
      'option middleware: belongs to the stack',
    )
  })

  it('is a LangChain middleware named shallot', () => {
    const middleware = shallotMiddleware()
    expect(middleware.name).toBe('shallot')
    expect(typeof middleware.wrapToolCall).toBe('function')
  })

  it('runs the tool a layer dispatches for another (fallback to a mirror) through LangChain, not the one the model called', async () => {
    const ran: string[] = []
    const forecast = tool(
      async () => {
        ran.push('get_forecast')
        throw Object.assign(new Error('HTTP 503 from the forecast service'), { status: 503 })
      },
      { name: 'get_forecast', description: 'Forecast for a city', schema: z.object({ city: z.string() }) },
    )
    const mirror = tool(
      async ({ city }) => {
        ran.push('get_forecast_mirror')
        return `mirror: sunny in ${city}`
      },
      { name: 'get_forecast_mirror', description: 'Forecast for a city, from the mirror', schema: z.object({ city: z.string() }) },
    )
    let stack: Stack | undefined
    const fromMirror = fallback({
      tools: { get_forecast: [{ from: 'tool', tool: 'get_forecast_mirror' }] },
      dispatch: (call, options) => (stack as Stack).dispatch(call, options),
    })
    stack = createStack({
      tools: [toShallotTool(forecast, { effect: 'read' }), toShallotTool(mirror, { effect: 'read' })],
      middleware: [fromMirror, errorClassifier()],
    })
    const model = fakeModel()
      .respondWithTools([{ name: 'get_forecast', args: { city: 'Lyon' } }])
      .respond((messages: BaseMessage[]) => new AIMessage(String(messages.at(-1)?.content)))
    const agent = createAgent({ model, tools: [forecast, mirror], middleware: [shallotMiddleware({ stack })] })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'weather in Lyon?' }] })
    expect(ran).toEqual(['get_forecast', 'get_forecast_mirror'])
    expect(String(messages.at(-1)?.content)).toContain('mirror: sunny in Lyon')
  })
})
