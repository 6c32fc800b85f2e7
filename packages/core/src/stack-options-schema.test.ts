import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createRun, createStack, defineTool, type Layer, parseOptions, ToolError } from './index.js'
import { maxStepsFrom, onlyWithoutStack, runBudgetRefinement, stackFromSource, stackSourceShape } from './kit.js'

// How a host (an integration) reads its options: the shared shape, the two refinements, then the builders.
const hostSchema = z
  .strictObject({ ...stackSourceShape, run: z.custom<object>().optional(), maxSteps: z.number().int().positive().optional() })
  .superRefine(onlyWithoutStack())
  .superRefine(runBudgetRefinement)
const parseHost = (options: unknown) => parseOptions('host()', hostSchema, options)

const leaky = defineTool({
  name: 'deploy',
  description: 'Deploy the site',
  input: z.object({}),
  effect: 'write',
  execute: async () => {
    throw new ToolError('permission_denied', 'token tok_live_0123456789 may not deploy')
  },
})

describe('stackSourceShape: one set of words for every host', () => {
  it('builds the stack with the escalation policy, the secrets and the stack limits it was given', async () => {
    const o = parseHost({ escalate: { fatal: false }, secrets: ['tok_live_0123456789'], limits: { maxSteps: 3, maxOutputChars: 100 } })
    const stack = stackFromSource(o, [leaky])

    const result = await stack.dispatch({ id: 'c1', name: 'deploy', args: {} }, { run: createRun({ maxSteps: maxStepsFrom(o) ?? 100 }) })
    // permission_denied is `fatal`: with escalate.fatal off it stays a soft result, and the secret is gone from it.
    expect(result.ok).toBe(false)
    expect(result.content).toContain('may not deploy')
    expect(result.content).not.toContain('tok_live_0123456789')
    expect(maxStepsFrom(o)).toBe(3)
  })

  it('takes layers as createStack does: the tool side of each, and refuses a layer of model calls only', async () => {
    const seen: string[] = []
    const layer: Layer = {
      name: 'seen',
      wrapToolCall: async (ctx, next) => {
        seen.push(ctx.call.name)
        await next()
      },
      wrapModelCall: async (_ctx, next) => next(),
    }
    const stack = stackFromSource(parseHost({ middleware: [layer], escalate: { fatal: false } }), [leaky])
    await stack.dispatch({ id: 'c1', name: 'deploy', args: {} })
    expect(seen).toEqual(['deploy'])
    expect(() => parseHost({ middleware: layer })).not.toThrow()
    const modelOnly: Layer = { name: 'trim', wrapModelCall: async (_ctx, next) => next() }
    expect(() => parseHost({ middleware: [modelOnly] })).toThrow(/option middleware: must be a layer with a tool side/)
  })

  it('escalates by default, as createStack does', async () => {
    const stack = stackFromSource(parseHost({}), [leaky])
    await expect(stack.dispatch({ id: 'c1', name: 'deploy', args: {} })).rejects.toMatchObject({ name: 'LoopError', kind: 'fatal' })
  })

  it('keeps the deprecated top-level maxSteps working, and refuses it next to limits.maxSteps', () => {
    expect(maxStepsFrom(parseHost({ maxSteps: 7 }))).toBe(7)
    expect(maxStepsFrom(parseHost({}))).toBeUndefined()
    expect(() => parseHost({ maxSteps: 7, limits: { maxSteps: 7 } })).toThrow(/option maxSteps.*deprecated spelling of limits.maxSteps/s)
  })

  it('refuses a step budget that is not a positive integer, naming limits.maxSteps', () => {
    for (const bad of [0, -3, 2.5, Number.NaN, Number.POSITIVE_INFINITY, '10', null]) {
      expect(() => parseHost({ limits: { maxSteps: bad } }), String(bad)).toThrow(/option limits\.maxSteps.*positive integer/s)
    }
  })

  it('refuses a step budget next to a ready run: the run already has one', () => {
    expect(() => parseHost({ run: createRun(), limits: { maxSteps: 3 } })).toThrow(/limits\.maxSteps.*set maxSteps in createRun/s)
    expect(() => parseHost({ run: createRun(), maxSteps: 3 })).toThrow(/option maxSteps.*set maxSteps in createRun/s)
  })

  it('next to a ready stack, refuses the parts that build one (limits included) but keeps the run budget', () => {
    const stack = createStack({ tools: [leaky] })
    for (const [key, value] of [
      ['escalate', { user: false }],
      ['secrets', ['x-secret-value']],
      ['redactOutput', true],
      ['middleware', []],
    ] as const) {
      expect(() => parseHost({ stack, [key]: value }), key).toThrow(new RegExp(`option ${key}.*belongs to the stack`, 's'))
    }
    expect(() => parseHost({ stack, limits: { maxOutputChars: 10 } })).toThrow(/limits\.maxOutputChars.*belongs to the stack/s)
    expect(stackFromSource(parseHost({ stack, limits: { maxSteps: 2 } }), [])).toBe(stack)
  })

  it('refuses malformed parts with the fix, never accepts them silently', () => {
    expect(() => parseHost({ secrets: 'tok_live_0123456789' })).toThrow(/option secrets.*array of strings or RegExps/s)
    expect(() => parseHost({ escalate: true })).toThrow(/option escalate/)
    expect(() => parseHost({ redactOutput: 'yes' })).toThrow(/option redactOutput/)
    expect(() => parseHost({ limits: 5 })).toThrow(/option limits/)
    // A hostile key is refused by the strict shape, not merged into the stack's options.
    expect(() => parseHost(JSON.parse('{"__proto__": {"escalate": {"fatal": false}}}'))).toThrow(/unknown option "__proto__"/)
    expect(({} as { escalate?: unknown }).escalate).toBeUndefined()
  })

  it("passes a malformed escalate on to createStack's own check, naming the field", () => {
    expect(() => stackFromSource(parseHost({ escalate: { fatal: 'no' } }), [leaky])).toThrow(/escalate\.fatal/)
  })
})
