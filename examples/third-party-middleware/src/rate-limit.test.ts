import { createStack, defineTool, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { middlewareConformance } from '@shallot/testing/conformance'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import rateLimitDefinition, { rateLimit } from './index.js'

middlewareConformance(rateLimitDefinition, {
  validOptions: { rps: 1000 },
  invalidOptions: [{ rps: 0 }, { rps: 'fast' }, { rps: 1, burst: 0 }],
})

function world() {
  const clock = manualClock()
  let executions = 0
  const tool = (name: string) =>
    defineTool({ name, description: name, input: z.object({}), effect: 'read', execute: async () => `${name} ${++executions}` })
  const stack = createStack({ middleware: [rateLimit({ rps: 5, burst: 2 })], tools: [tool('search'), tool('lookup')], clock })
  let ids = 0
  const call = (name: string): Promise<ToolResult> => stack.dispatch({ id: `c${++ids}`, name, args: {} })
  return { clock, call, executions: () => executions }
}

describe('rateLimit', () => {
  it('refuses the call after the burst softly, before it runs, with the wait in retryAfterMs', async () => {
    const w = world()
    const results = [await w.call('search'), await w.call('search'), await w.call('search')]
    expect(results.map((r) => r.ok)).toEqual([true, true, false])
    expect(results[2]?.error).toMatchObject({ code: 'rate_limited', retryable: true, safeToRepeat: true, retryAfterMs: 200 })
    expect(results[2]?.trace.map((e) => e.type)).toEqual(['rate_limit.refused'])
    expect(w.executions()).toBe(2)
  })

  it('admits calls again as the bucket refills', async () => {
    const w = world()
    await w.call('search')
    await w.call('search')
    await w.clock.advance(199)
    expect((await w.call('search')).ok).toBe(false)
    await w.clock.advance(1)
    expect((await w.call('search')).ok).toBe(true)
  })

  it('keeps one bucket per tool', async () => {
    const w = world()
    await w.call('search')
    await w.call('search')
    expect((await w.call('search')).ok).toBe(false)
    expect((await w.call('lookup')).ok).toBe(true)
  })
})
