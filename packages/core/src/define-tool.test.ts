import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool } from './define-tool.js'

const spec = { name: 'charge_card', description: 'Charge a card', input: z.object({ amount: z.number() }), execute: () => 'charged' }

describe('defineTool: reconcile', () => {
  it('keeps a reconcile function on the tool, beside execute', async () => {
    const tool = defineTool({ ...spec, reconcile: () => ({ status: 'not_applied' }) })
    expect(await tool.reconcile?.({ amount: 5 }, undefined as never)).toEqual({ status: 'not_applied' })
    expect(Object.isFrozen(tool)).toBe(true)
  })

  it('has no reconcile key when none is given', () => {
    expect('reconcile' in defineTool(spec)).toBe(false)
  })

  it('refuses a reconcile that is not a function, naming the tool and the shape', () => {
    expect(() => defineTool({ ...spec, reconcile: 'lookup' as never })).toThrow(
      /defineTool\("charge_card"\): reconcile must be a function \(args, context\) => \{ status: 'applied', result \}/,
    )
  })
})
