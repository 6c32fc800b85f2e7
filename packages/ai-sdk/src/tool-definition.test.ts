// An AI SDK tool under a stack takes the whole defineTool spec: the effect, a reconcile, and the call's idempotency
// key handed to its execute (to forward upstream). What a stack's tool cannot keep of an SDK tool is refused by name.

import { createStack, ToolError } from '@shallot/core'
import { generateText, stepCountIs, tool } from 'ai'
import { defaultMiddleware, idempotency } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { idempotencyKeyOf, shallotTools, toShallotTool } from './index.js'
import { scriptedLanguageModel } from './scripted-language-model.test-helper.js'

/** A payment service that fails the first attempt after taking it (a 503 as the answer is lost), keyed by the caller. */
function payments() {
  const keys: Array<string | undefined> = []
  const taken = new Set<string>()
  const pay = tool({
    description: 'Pay an invoice',
    inputSchema: z.object({ invoice: z.string() }),
    execute: async ({ invoice }, options) => {
      const key = idempotencyKeyOf(options)
      keys.push(key)
      const first = keys.length === 1
      if (key !== undefined) taken.add(key)
      if (first) throw new ToolError('upstream_error', 'payments answered 503', { category: 'transient', retryable: true })
      return `paid ${invoice}`
    },
  })
  return { pay, keys, taken }
}

describe('an AI SDK tool under a stack', () => {
  it("hands execute the call's idempotency key, the same on the attempt a retry repeats", async () => {
    const { pay, keys, taken } = payments()
    const shallot = shallotTools({ pay }, { middleware: defaultMiddleware(), effects: { pay: 'idempotent' } })
    const model = scriptedLanguageModel([{ toolCalls: [{ name: 'pay', input: { invoice: 'inv_1' } }] }, { text: 'done' }])
    const { text } = await generateText({
      model,
      prompt: 'pay inv_1',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(4), shallot.stopOnHardError],
    })
    expect(text).toBe('done')
    expect(keys).toHaveLength(2)
    expect(typeof keys[0]).toBe('string')
    expect(keys[1]).toBe(keys[0])
    expect(taken.size).toBe(1)
  })

  it('toShallotTool forwards the key too, for a stack of your own', async () => {
    const { pay, keys } = payments()
    const stack = createStack({ tools: [toShallotTool('pay', pay, { effect: 'idempotent' })], middleware: [idempotency()] })
    await stack.dispatch({ id: 'c1', name: 'pay', args: { invoice: 'inv_2' } })
    expect(keys).toHaveLength(1)
    expect(keys[0]).toMatch(/\S/)
  })

  it('without an idempotency layer there is no key, and idempotencyKeyOf reads nonsense as none', () => {
    expect(idempotencyKeyOf(undefined)).toBeUndefined()
    expect(idempotencyKeyOf({ idempotencyKey: 42 })).toBeUndefined()
  })

  it.each([
    ['needsApproval', { needsApproval: true }, /needsApproval cannot be kept: a stack would run the call without asking/],
    ['toModelOutput', { toModelOutput: () => ({ type: 'text', value: '' }) }, /toModelOutput cannot be kept/],
    ['onInputStart', { onInputStart: () => {} }, /onInputStart cannot be kept/],
    ['onInputAvailable', { onInputAvailable: () => {} }, /onInputAvailable cannot be kept/],
    ['a field it does not know', { retries: 3 }, /the tool's retries cannot be kept: a stack does not know it/],
  ])('toShallotTool refuses %s instead of dropping it', (_what, extra, message) => {
    const sdkTool = { ...tool({ inputSchema: z.object({}), execute: async () => 1 }), ...extra }
    expect(() => toShallotTool('t', sdkTool as never)).toThrow(message)
  })

  it("keeps what only describes the tool, and shallotTools keeps an SDK tool's needsApproval and toModelOutput", () => {
    const described = tool({
      title: 'Search',
      description: 'Search the docs',
      inputSchema: z.object({ q: z.string() }),
      inputExamples: [{ input: { q: 'retry' } }],
      strict: true,
      providerOptions: { openai: {} },
      execute: async ({ q }) => q,
    })
    expect(toShallotTool('search', { ...described, needsApproval: undefined } as never)).toMatchObject({
      name: 'search',
      description: 'Search the docs',
    })
    const guarded = tool({
      inputSchema: z.object({}),
      needsApproval: true,
      toModelOutput: () => ({ type: 'text', value: 'x' }),
      execute: async () => 1,
    })
    expect(shallotTools({ guarded }).tools.guarded.needsApproval).toBeDefined()
  })
})
