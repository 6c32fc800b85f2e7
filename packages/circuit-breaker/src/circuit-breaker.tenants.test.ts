import { createRun, createStack, defineTool, type ModelContext, type ToolContext, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive } from './index.js'

/** A `search` whose index is down for everyone. */
function searchTool() {
  return defineTool({
    name: 'search',
    description: 'Search the tenant’s documents',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      throw new ToolError('upstream_error', 'index answered 503')
    },
  })
}

const tenantOf = (ctx: ToolContext | ModelContext) => ctx.run.state.tenant as string
const byTenant = (ctx: ToolContext | ModelContext) => ('call' in ctx ? `${tenantOf(ctx)}:${ctx.call.name}` : undefined)
const search = (id: string) => ({ id, name: 'search', args: { q: 'invoices' } })

describe('circuit-breaker: a run is told only about the circuits its own calls use', () => {
  it("never shows one tenant's open circuit, or its key, in another tenant's tool list", async () => {
    const clock = manualClock()
    const tool = searchTool()
    const stack = createStack({
      middleware: [circuitBreaker({ key: byTenant, policy: consecutive({ threshold: 1 }) })],
      tools: [tool],
      clock,
    })
    const acme = createRun({ state: { tenant: 'acme' } })
    const globex = createRun({ state: { tenant: 'globex' } })
    await stack.dispatch(search('g1'), { run: globex })
    await clock.advance(30_000)
    // globex's circuit may probe by now; acme's opens.
    await stack.dispatch(search('a1'), { run: acme })
    expect(stack.describeTool(tool, acme)).toBe('UNAVAILABLE (acme:search): circuit open, retry in 30s')
    expect(stack.describeTool(tool, globex)).toBeUndefined()
    expect(stack.describeTool(tool, createRun({ state: { tenant: 'initech' } }))).toBeUndefined()
  })

  it('keeps two stacks that share one breaker apart in what their runs are told', async () => {
    const clock = manualClock()
    const layer = circuitBreaker({ key: (ctx) => `host-${tenantOf(ctx)}`, policy: consecutive({ threshold: 1 }) })
    const tool = searchTool()
    const first = createStack({ middleware: [layer], tools: [tool], clock })
    const second = createStack({ middleware: [layer], tools: [tool], clock })
    const run = createRun({ state: { tenant: 'acme' } })
    await first.dispatch(search('a1'), { run })
    expect(first.describeTool(tool, run)).toBe('UNAVAILABLE (host-acme): circuit open, retry in 30s')
    expect(second.describeTool(tool, createRun({ state: { tenant: 'globex' } }))).toBeUndefined()
  })
})
