import { createStack, defineTool, LoopError, OptionsError, ToolError, type ToolErrorOptions } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

function failing(code: string, options: ToolErrorOptions) {
  let runs = 0
  const tool = defineTool({
    name: 'delete_repo',
    description: 'Delete a repository',
    input: z.object({}),
    effect: 'write',
    execute: () => {
      runs++
      throw new ToolError(code, 'token sk-live-4242424242 lacks admin scope', options)
    },
  })
  return { tool, runs: () => runs }
}

const call = { id: 'c1', name: 'delete_repo', args: {} }
const model = (calls: number) => {
  let turn = 0
  return {
    generate: async () => (turn++ < calls ? { toolCalls: [{ id: `c${turn}`, name: 'delete_repo', args: {} }] } : { text: 'gave up' }),
  }
}

describe('escalation is the stack’s policy', () => {
  it('rejects stack.dispatch with user_input_required for a user-category soft error, secrets redacted', async () => {
    const { tool, runs } = failing('permission_denied', { category: 'user' })
    const stack = createStack({ tools: [tool], secrets: ['sk-live-4242424242'] })
    const hard = await stack.dispatch(call).catch((err: unknown) => err)
    expect(LoopError.is(hard)).toBe(true)
    expect(hard).toMatchObject({
      kind: 'user_input_required',
      message: 'delete_repo needs a person: token [redacted] lacks admin scope',
      details: { tool: 'delete_repo', code: 'permission_denied', message: 'token [redacted] lacks admin scope' },
    })
    expect(ToolError.is((hard as LoopError).cause)).toBe(true)
    expect(runs()).toBe(1)
  })

  it('rejects with fatal for a fatal soft error (permission_denied defaults to fatal)', async () => {
    const { tool } = failing('permission_denied', {})
    await expect(createStack({ tools: [tool] }).dispatch(call)).rejects.toMatchObject({
      kind: 'fatal',
      message: 'delete_repo failed fatally: token sk-live-4242424242 lacks admin scope',
    })
  })

  it('resolves a soft result for each category the policy turns off, and never escalates other categories', async () => {
    const user = failing('permission_denied', { category: 'user' }).tool
    const soft = await createStack({ tools: [user], escalate: { user: false } }).dispatch(call)
    expect(soft).toMatchObject({ ok: false, error: { code: 'permission_denied', category: 'user' } })
    const fatal = failing('permission_denied', {}).tool
    expect(await createStack({ tools: [fatal], escalate: { fatal: false } }).dispatch(call)).toMatchObject({ ok: false })
    await expect(createStack({ tools: [fatal], escalate: { user: false } }).dispatch(call)).rejects.toMatchObject({ kind: 'fatal' })
    const recoverable = failing('not_found', {}).tool
    expect(await createStack({ tools: [recoverable] }).dispatch(call)).toMatchObject({ ok: false, error: { category: 'recoverable' } })
  })

  it('ends a createAgent run the same way, and createAgent({ escalate }) passes the policy to the stack it builds', async () => {
    const { tool } = failing('permission_denied', { category: 'user' })
    const stopped = await createAgent({ model: model(1), tools: [tool] }).run({ input: 'x' })
    expect(stopped).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' }, turns: 0 })
    const agent = createAgent({ model: model(1), tools: [tool], escalate: { user: false } })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'completed', output: 'gave up' })
    await expect(agent.stack.dispatch(call)).resolves.toMatchObject({ ok: false })
  })

  it('stops the sibling calls of a turn when one call escalates', async () => {
    let siblingSawAbort = false
    const slow = defineTool({
      name: 'slow',
      description: '',
      input: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            siblingSawAbort = true
            resolve('late')
          })
        }),
    })
    const { tool } = failing('permission_denied', { category: 'user' })
    const twoCalls = {
      generate: async () => ({
        toolCalls: [
          { id: 'a', name: 'slow', args: {} },
          { id: 'b', name: 'delete_repo', args: {} },
        ],
      }),
    }
    const outcome = await createAgent({ model: twoCalls, tools: [slow, tool] }).run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' } })
    expect(siblingSawAbort).toBe(true)
  })

  it('refuses a bad policy, and a policy given next to a ready stack, with an OptionsError naming it', () => {
    const { tool } = failing('x', {})
    expect(() => createStack({ tools: [tool], escalate: { user: 'no' as never } })).toThrow(
      /createStack\(\): option escalate\.user: .*\(got "no"\)/,
    )
    expect(() => createStack({ tools: [tool], escalate: { users: false } as never })).toThrow(OptionsError)
    const stack = createStack({ tools: [tool] })
    expect(() => createAgent({ model: model(0), stack, escalate: { user: false } })).toThrow(
      'createAgent(): option escalate: belongs to the stack; with `stack`, pass it to createStack({ escalate })',
    )
  })
})

describe('createStack option errors', () => {
  it('names the limit and the value it got', () => {
    expect(() => createStack({ tools: [], limits: { maxArgsDepth: 0 } })).toThrow(OptionsError)
    expect(() => createStack({ tools: [], limits: { maxArgsDepth: 0 } })).toThrow(/option limits\.maxArgsDepth: .*\(got 0\)/)
    expect(() => createStack({ tools: [], limits: { maxOutputChars: Number.NaN } })).toThrow(/limits\.maxOutputChars.*\(got NaN\)/)
    expect(() => createStack({ tools: [], limits: { maxArgBytes: 1 } as never })).toThrow(/maxArgBytes/)
  })

  it('checks limits and policy at every createStack, one accepted before and changed since included', () => {
    createStack({ tools: [] })
    const limits = { maxArgsDepth: 8 }
    const escalate = { user: false }
    createStack({ tools: [], limits, escalate })
    limits.maxArgsDepth = 0
    expect(() => createStack({ tools: [], limits })).toThrow(/option limits\.maxArgsDepth: .*\(got 0\)/)
    ;(escalate as { user: unknown }).user = 'no'
    expect(() => createStack({ tools: [], escalate })).toThrow(/option escalate\.user: .*\(got "no"\)/)
    expect(() => createStack({ tools: [], limits: JSON.parse('{"__proto__": {"maxArgsDepth": 1}}') })).toThrow(/__proto__/)
    expect(() => createStack({ tools: [] })).not.toThrow()
  })
})
