import { createRun, createStack, defineTool, type Json, OptionsError, type StackEvent, type ToolContext, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallbackDefinition } from './definition.js'
import { type FallbackOptions, fallback } from './index.js'

const down = () => new ToolError('upstream_error', 'account service returned 503', { category: 'transient', retryable: true })

/** A `balance` read whose answer names its owner, and a switch that takes it down. */
function balanceTool(owner: string) {
  const health = { up: true }
  const tool = defineTool({
    name: 'balance',
    description: 'the account balance',
    input: z.object({ account: z.string() }),
    effect: 'read',
    execute: ({ account }) => {
      if (!health.up) throw down()
      return { owner, account, balance: `${owner}'s balance` }
    },
  })
  return { tool, health }
}

const tenantRun = (tenant: Json) => createRun({ state: { tenant } })
const byTenant = (ctx: ToolContext) => ctx.run.state.tenant as string

/** One stack, its tool, and every event its layers emit. */
function tenantStack(options: Omit<FallbackOptions, 'dispatch'>) {
  const clock = manualClock()
  const { tool, health } = balanceTool('bank')
  const stack = createStack({ middleware: [fallback(options)], tools: [tool], clock })
  const events: StackEvent[] = []
  stack.on((event) => {
    if (event.type.startsWith('fallback.')) events.push(event)
  })
  let n = 0
  const ask = (tenant: Json, account = 'ACC-1') =>
    stack.dispatch({ id: `c${++n}`, name: 'balance', args: { account } }, { run: tenantRun(tenant) })
  return { clock, health, stack, events, ask }
}

describe('fallback: the cache never crosses a stack or a scope', () => {
  it('two stacks sharing one layer never answer each other from the cache', async () => {
    const clock = manualClock()
    const layer = fallback({ tools: { balance: { from: 'cache' } } })
    const alice = balanceTool('alice')
    const bob = balanceTool('bob')
    const aliceStack = createStack({ middleware: [layer], tools: [alice.tool], clock })
    const bobStack = createStack({ middleware: [layer], tools: [bob.tool], clock })
    const call = { id: 'c1', name: 'balance', args: { account: 'ACC-1' } }
    expect((await aliceStack.dispatch(call)).value).toMatchObject({ owner: 'alice' })
    bob.health.up = false
    const bobs = await bobStack.dispatch(call)
    expect(bobs.ok).toBe(false)
    expect(bobs.error?.code).toBe('upstream_error')
    // Each stack still answers from its own cache.
    expect((await bobStack.dispatch(call)).content).not.toContain('alice')
    alice.health.up = false
    expect((await aliceStack.dispatch(call)).value).toMatchObject({ value: { owner: 'alice' } })
  })

  it('two tenants of one stack never share a cached answer (scope function); each is answered from its own', async () => {
    const { health, events, ask } = tenantStack({ tools: { balance: { from: 'cache' } }, cacheScope: byTenant })
    expect((await ask('acme')).ok).toBe(true)
    health.up = false
    const globex = await ask('globex')
    expect(globex.ok).toBe(false)
    expect(globex.error?.code).toBe('upstream_error')
    expect(events.at(-1)).toMatchObject({ type: 'fallback.unavailable', tried: ['cache'] })
    const acme = await ask('acme')
    expect(acme.replayed).toBe(true)
    expect(acme.value).toMatchObject({ note: expect.stringContaining('cached'), value: { owner: 'bank' } })
  })

  it('parallel calls of two tenants, failing in between, are each answered only from their own results', async () => {
    const { health, ask } = tenantStack({ tools: { balance: { from: 'cache' } }, cacheScope: byTenant })
    const tenants = ['acme', 'globex', '__proto__', 'constructor', 'toString']
    await Promise.all(tenants.filter((_, i) => i % 2 === 0).map((t) => ask(t, `ACC-${t}`)))
    health.up = false
    const answers = await Promise.all(tenants.flatMap((t) => [ask(t, `ACC-${t}`), ask(t, 'ACC-acme')]))
    const replayed = answers.map((a) => a.replayed)
    // Only the tenants that were answered before (every other one), and only for their own account.
    expect(replayed).toEqual([true, true, false, false, true, false, false, false, true, false])
  })

  it('a scope function that throws or answers no scope: the call still runs, nothing is cached or served, and the host is told', async () => {
    const problems: unknown[] = [undefined, '', 'has space', 42, { tenant: 'acme' }, 'x'.repeat(129)]
    const revoked = Proxy.revocable({}, {})
    revoked.revoke()
    const thrown: unknown[] = [new Error('no tenant on this run'), revoked.proxy, Symbol('odd')]
    let mode: 'throw' | 'value' | 'ok' = 'ok'
    let index = 0
    const { health, events, ask } = tenantStack({
      tools: { balance: { from: 'cache' } },
      cacheScope: (ctx) => {
        if (mode === 'throw') throw thrown[index]
        return (mode === 'ok' ? byTenant(ctx) : problems[index]) as string
      },
    })
    mode = 'throw'
    for (index = 0; index < thrown.length; index++) expect((await ask('acme')).ok).toBe(true)
    mode = 'value'
    for (index = 0; index < problems.length; index++) expect((await ask('acme')).ok).toBe(true)
    health.up = false
    mode = 'ok'
    // Nothing was stored under any scope, so nothing can be served.
    expect((await ask('acme')).error?.code).toBe('upstream_error')
    const scopeEvents = events.filter((e) => e.type === 'fallback.cache_scope_failed')
    expect(scopeEvents.map((e) => e.problem)).toEqual([
      'threw: no tenant on this run',
      'threw a value that cannot be read',
      'threw: symbol',
      'must be 1-128 printable ASCII characters without spaces, got undefined',
      'must be 1-128 printable ASCII characters without spaces, got ""',
      'must be 1-128 printable ASCII characters without spaces, got "has space"',
      'must be 1-128 printable ASCII characters without spaces, got number',
      'must be 1-128 printable ASCII characters without spaces, got object',
      `must be 1-128 printable ASCII characters without spaces, got "${'x'.repeat(40)}"`,
    ])
  })

  it('a scope function that throws on a failing call serves nothing, and the original failure reaches the model', async () => {
    let broken = false
    const { health, ask } = tenantStack({
      tools: { balance: { from: 'cache' } },
      cacheScope: (ctx) => {
        if (broken) throw new Error('scope store down')
        return byTenant(ctx)
      },
    })
    await ask('acme')
    health.up = false
    broken = true
    expect((await ask('acme')).error?.code).toBe('upstream_error')
  })

  it('runs of one stack share the cache when no scope is given: the stack is the scope', async () => {
    const { health, ask } = tenantStack({ tools: { balance: { from: 'cache' } } })
    await ask('acme')
    health.up = false
    expect((await ask('globex')).replayed).toBe(true)
  })

  it.each([
    [{ cacheScope: 'tenant-a' }, 'option cacheScope: must be a function (ctx) => string'],
    [{ cacheScope: 42 }, 'option cacheScope: must be a function (ctx) => string'],
  ])('refuses %j with an error naming the option', (options, text) => {
    expect(() => fallback({ tools: { balance: { from: 'cache' } }, ...options } as never)).toThrow(OptionsError)
    expect(() => fallback({ tools: { balance: { from: 'cache' } }, ...options } as never)).toThrow(text)
  })

  it('a config file cannot write cacheScope: it is code, and the file is data', () => {
    const file = { tools: { balance: { from: 'cache' } }, cacheScope: 'tenant' }
    expect(() => fallbackDefinition.build(file)).toThrow('unknown option "cacheScope"')
  })
})
