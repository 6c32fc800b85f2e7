import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import {
  createRun,
  createStack,
  defineTool,
  LoopError,
  OptionsError,
  type Stack,
  type StackEvent,
  type ToolEffect,
  ToolError,
} from '@shallot/core'
import { constant, retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type FallbackOptions, fallback } from './index.js'

const down = () => new ToolError('upstream_error', 'status service returned 503', { category: 'transient', retryable: true })

/** Tools whose health a test flips, behind fallback → circuit breaker → retry, on a manual clock. */
function setup(options: Omit<FallbackOptions, 'dispatch'>, { threshold = 2 } = {}) {
  const clock = manualClock()
  const health: Record<string, boolean> = { status_page: true, status_mirror: true, post_incident: true }
  const runs: Record<string, number> = {}
  const tool = (name: string, effect: ToolEffect, answer: (args: { region?: string | undefined }) => unknown) =>
    defineTool({
      name,
      description: name,
      input: z.object({ region: z.string().optional() }),
      effect,
      execute: (args) => {
        runs[name] = (runs[name] ?? 0) + 1
        if (!health[name]) throw down()
        return answer(args)
      },
    })
  const tools = [
    tool('status_page', 'read', ({ region }) => ({ region: region ?? 'all', status: 'all systems go' })),
    tool('status_mirror', 'read', () => ({ status: 'degraded (mirror)' })),
    tool('post_incident', 'write', () => 'incident posted'),
  ]
  let stack: Stack
  const layer = fallback({ ...options, dispatch: (call, o) => stack.dispatch(call, o) })
  stack = createStack({
    middleware: [
      layer,
      circuitBreaker({ policy: consecutive({ threshold }), cooldownMs: 600_000 }),
      retry({ maxAttempts: 2, backoff: constant(0) }),
    ],
    tools,
    clock,
  })
  const events: StackEvent[] = []
  stack.on((event) => {
    // The layers' own events; the stack's call.started / call.finished are asserted in core.
    if (!event.type.startsWith('call.')) events.push(event)
  })
  const call = (name: string, args: object = {}) => stack.dispatch({ id: `${name}-${clock.now()}`, name, args })
  return { clock, health, runs, stack, events, call }
}

describe('fallback', () => {
  it('answers an open circuit on status_page with the cached answer, and the model reads its age', async () => {
    const { clock, health, runs, events, call } = setup({ tools: { status_page: { from: 'cache' } } })
    expect((await call('status_page')).value).toEqual({ region: 'all', status: 'all systems go' })
    await clock.advance(4 * 60_000)
    health.status_page = false
    // Two failures past retry (each answered from the cache too) open the circuit.
    await call('status_page')
    await call('status_page')
    expect(events.filter((e) => e.type === 'circuit-breaker.state').map((e) => e.to)).toEqual(['open'])
    const before = runs.status_page
    const result = await call('status_page')
    expect(runs.status_page).toBe(before)
    expect(result.ok).toBe(true)
    expect(result.replayed).toBe(true)
    expect(result.value).toEqual({ note: 'cached 4 min ago', value: { region: 'all', status: 'all systems go' } })
    expect(result.content).toContain('cached 4 min ago')
    expect(result.content).toContain('all systems go')
    expect(events.at(-1)).toMatchObject({ type: 'fallback.used', from: 'cache', because: 'circuit_open', ageMs: 240_000 })
  })

  it('never falls back for a write, and never caches one, even when a default source would answer', async () => {
    const { health, runs, events, call } = setup({
      tools: { post_incident: { from: 'value', value: 'posted (fallback)' } },
      default: [{ from: 'cache' }, { from: 'value', value: 'fixed' }],
    })
    expect((await call('post_incident')).value).toBe('incident posted')
    health.post_incident = false
    const result = await call('post_incident')
    expect(result.ok).toBe(false)
    expect(result.error?.code).toBe('upstream_error')
    // retry does not repeat a write whose failure is not safeToRepeat: the failing call ran once.
    expect(runs.post_incident).toBe(2)
    expect(events.some((e) => e.type.startsWith('fallback.'))).toBe(false)
  })

  it('keys the cache by tool and canonical arguments: key order does not matter, other arguments miss', async () => {
    const { health, events, call } = setup({ tools: { status_page: { from: 'cache' } } }, { threshold: 100 })
    await call('status_page', { region: 'eu' })
    health.status_page = false
    const same = await call('status_page', JSON.parse('{ "region" : "eu" }'))
    expect(same.value).toMatchObject({ value: { region: 'eu' } })
    const other = await call('status_page', { region: 'us' })
    expect(other.ok).toBe(false)
    expect(other.error?.code).toBe('upstream_error')
    expect(events.at(-1)).toMatchObject({ type: 'fallback.unavailable', because: 'upstream_error', tried: ['cache'] })
  })

  for (const bound of ['maxCacheEntries', 'cacheEntries'] as const) {
    it(`keeps at most ${bound} results, forgetting the least recently used (cacheEntries is the deprecated name)`, async () => {
      const { health, call } = setup({ tools: { status_page: { from: 'cache' } }, [bound]: 1 }, { threshold: 100 })
      await call('status_page', { region: 'eu' })
      await call('status_page', { region: 'us' })
      health.status_page = false
      expect((await call('status_page', { region: 'us' })).ok).toBe(true)
      expect((await call('status_page', { region: 'eu' })).error?.code).toBe('upstream_error')
    })
  }

  it('never serves a result older than cacheMaxAgeMs', async () => {
    const { clock, health, call } = setup({ tools: { status_page: { from: 'cache' } }, cacheMaxAgeMs: 60_000 }, { threshold: 100 })
    await call('status_page')
    health.status_page = false
    await clock.advance(60_001)
    expect((await call('status_page')).error?.code).toBe('upstream_error')
  })

  it('hands out copies: a caller that mutates an answer changes neither the cache nor the next answer', async () => {
    const { health, call } = setup({ tools: { status_page: { from: 'cache' } } }, { threshold: 100 })
    const fresh = await call('status_page')
    ;(fresh.value as { status: string }).status = 'tampered'
    health.status_page = false
    const first = await call('status_page')
    ;((first.value as { value: { status: string } }).value as { status: string }).status = 'tampered again'
    expect(((await call('status_page')).value as { value: unknown }).value).toEqual({ region: 'all', status: 'all systems go' })
  })

  it('does not cache a result it cannot copy (a function inside), so it never serves half of one', async () => {
    const clock = manualClock()
    let up = true
    const tool = defineTool({
      name: 'handle',
      description: 'returns something with a function inside',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        if (!up) throw down()
        return { ok: true, close: () => {} }
      },
    })
    const stack = createStack({ middleware: [fallback({ default: { from: 'cache' } })], tools: [tool], clock })
    expect((await stack.dispatch({ id: '1', name: 'handle', args: {} })).ok).toBe(true)
    up = false
    expect((await stack.dispatch({ id: '2', name: 'handle', args: {} })).error?.code).toBe('upstream_error')
  })

  it('falls back to another tool of the stack, and says which', async () => {
    const { health, runs, call } = setup({ tools: { status_page: { from: 'tool', tool: 'status_mirror' } } })
    health.status_page = false
    const result = await call('status_page')
    expect(result.value).toEqual({ note: 'from status_mirror', value: { status: 'degraded (mirror)' } })
    expect(runs.status_mirror).toBe(1)
  })

  it('two tools that fall back to each other make one hop, not a loop', async () => {
    const { health, runs, events, call } = setup(
      {
        tools: { status_page: { from: 'tool', tool: 'status_mirror' }, status_mirror: { from: 'tool', tool: 'status_page' } },
      },
      { threshold: 100 },
    )
    health.status_page = false
    health.status_mirror = false
    const result = await call('status_page')
    expect(result.error?.code).toBe('upstream_error')
    // status_page: two attempts (retry); the mirror as its fallback: two attempts; the mirror does not fall back again.
    expect(runs).toMatchObject({ status_page: 2, status_mirror: 2 })
    expect(events.map((e) => e.type).filter((t) => t.startsWith('fallback.'))).toEqual(['fallback.tool_failed', 'fallback.unavailable'])
  })

  it('a fallback mapping that throws loses only that source: the next one answers, the model never sees the throw', async () => {
    const { health, events, call } = setup({
      tools: {
        status_page: [
          {
            from: 'tool',
            tool: 'status_mirror',
            args: () => {
              throw new TypeError('mapping bug')
            },
          },
          { from: 'value', value: 'status unknown' },
        ],
      },
    })
    health.status_page = false
    expect((await call('status_page')).value).toMatchObject({ value: 'status unknown' })
    expect(events.find((e) => e.type === 'fallback.tool_failed')).toMatchObject({ via: 'status_mirror', code: 'thrown' })
  })

  it('a fallback call that ends the run ends it: its LoopError reaches the caller untouched', async () => {
    const clock = manualClock()
    const hard = new LoopError('budget_exhausted', 'no steps left')
    const sick = defineTool({
      name: 'status_page',
      description: 'down',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw down()
      },
    })
    const stack = createStack({
      middleware: [fallback({ tools: { status_page: { from: 'tool', tool: 'status_mirror' } }, dispatch: () => Promise.reject(hard) })],
      tools: [sick],
      clock,
    })
    await expect(stack.dispatch({ id: '1', name: 'status_page', args: {} })).rejects.toBe(hard)
  })

  it('tries the sources in order: a cache miss falls through to a fixed value', async () => {
    const { health, call } = setup({ tools: { status_page: [{ from: 'cache' }, { from: 'value', value: { status: 'unknown' } }] } })
    health.status_page = false
    expect((await call('status_page')).value).toEqual({ note: 'a default answer', value: { status: 'unknown' } })
  })

  it('passes through a failure whose code is not in `on`', async () => {
    const clock = manualClock()
    const missing = defineTool({
      name: 'lookup',
      description: 'lookup',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw new ToolError('not_found', 'no such order', { category: 'recoverable' })
      },
    })
    const stack = createStack({ middleware: [fallback({ default: { from: 'value', value: 'x' } })], tools: [missing], clock })
    expect((await stack.dispatch({ id: '1', name: 'lookup', args: {} })).error?.code).toBe('not_found')
  })

  it('does not fall back once the run is cancelled: the caller gets the cancellation', async () => {
    const clock = manualClock()
    const controller = new AbortController()
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        controller.abort(new Error('stop'))
        signal.throwIfAborted()
        return 'never'
      },
    })
    const stack = createStack({ middleware: [fallback({ default: { from: 'value', value: 'x' } })], tools: [slow], clock })
    const pending = stack.dispatch({ id: '1', name: 'slow', args: {} }, { run: createRun({ signal: controller.signal }) })
    await expect(pending).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')
  })

  it.each([
    [{ tools: { status_page: { from: 'tool', tool: 'status_page' } }, dispatch: () => Promise.reject() }, 'cannot fall back to itself'],
    [{ tools: { status_page: { from: 'tool', tool: 'status_mirror' } } }, 'dispatch'],
    [{ tools: { status_page: { from: 'disk' } } }, 'tools.status_page'],
    [{ tools: { status_page: { from: 'value' } } }, 'tools.status_page'],
    [{ tools: { status_page: { from: 'value', value: Number.NaN } } }, 'tools.status_page'],
    [{ tools: { status_page: [] } }, 'tools.status_page'],
    [{ on: ['Circuit Open'] }, 'on'],
    [{ maxCacheEntries: 0 }, 'maxCacheEntries'],
    [{ maxCacheEntries: 5, cacheEntries: 5 }, 'give maxCacheEntries only'],
    [{ cacheMaxAgeMs: Number.POSITIVE_INFINITY }, 'cacheMaxAgeMs'],
    [{ tools: { 'no spaces': { from: 'cache' } } }, 'tools'],
  ])('refuses %j with an error naming %s', (options, text) => {
    expect(() => fallback(options as never)).toThrow(OptionsError)
    expect(() => fallback(options as never)).toThrow(text)
  })
})

describe('fallback: the call it makes is named after the call it answers', () => {
  it('dispatching the same call again makes its fallback call under the same id, so an answer to that call (an approval) still names it', async () => {
    const ids: string[] = []
    const failing = defineTool({
      name: 'status_page',
      description: 'status',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw down()
      },
    })
    const mirror = defineTool({ name: 'status_mirror', description: 'mirror', input: z.object({}), effect: 'read', execute: () => 'ok' })
    let stack: Stack
    const layer = fallback({
      tools: { status_page: [{ from: 'tool', tool: 'status_mirror' }] },
      dispatch: (call, o) => {
        ids.push(call.id)
        return stack.dispatch(call, o)
      },
    })
    stack = createStack({ middleware: [layer], tools: [failing, mirror] })
    const run = createRun()
    await stack.dispatch({ id: 'c1', name: 'status_page', args: {} }, { run })
    await stack.dispatch({ id: 'c2', name: 'status_page', args: {} }, { run })
    await stack.dispatch({ id: 'c1', name: 'status_page', args: {} }, { run })
    expect(ids).toEqual(['c1/fallback-1', 'c2/fallback-1', 'c1/fallback-1'])
  })
})
