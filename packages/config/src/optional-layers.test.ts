import { defineTool, ToolError } from '@shallot/core'
import { memoryRetryBudget } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStackFromConfig, loadConfig } from './index.js'

// The optional layers are built in: a file names them without installing or registering anything.

describe('bulkhead in a config file', () => {
  it('is named in the stack with file options, and refuses bad ones naming the option', async () => {
    const clock = manualClock()
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      effect: 'read',
      execute: (_args, { signal }) => clock.sleep(100, signal).then(() => 'done'),
    })
    const config = await loadConfig({ stack: [{ bulkhead: { maxConcurrent: 1, maxQueue: 0 } }, 'timeout'] })
    const stack = createStackFromConfig(config, { tools: [slow], clock })
    const calls = [stack.dispatch({ id: '1', name: 'slow', args: {} }), stack.dispatch({ id: '2', name: 'slow', args: {} })]
    await clock.runAll()
    const [first, second] = await Promise.all(calls)
    expect(first?.value).toBe('done')
    expect(second?.error?.code).toBe('overloaded')
    await expect(loadConfig({ stack: [{ bulkhead: { maxConcurrent: 0 } }] })).rejects.toThrow(/maxConcurrent/)
  })
})

describe('fallback in a config file', () => {
  it('is named in the stack with its sources as data', async () => {
    let up = true
    const status = defineTool({
      name: 'status_page',
      description: 'status',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
        return 'all systems go'
      },
    })
    const config = await loadConfig({ stack: [{ fallback: { tools: { status_page: { from: 'cache' } } } }, 'circuit-breaker'] })
    const stack = createStackFromConfig(config, { tools: [status], clock: manualClock() })
    await stack.dispatch({ id: '1', name: 'status_page', args: {} })
    up = false
    expect((await stack.dispatch({ id: '2', name: 'status_page', args: {} })).value).toMatchObject({ value: 'all systems go' })
  })

  it('refuses a tool source when the host gives no dispatch, saying what is missing', async () => {
    const file = { stack: [{ fallback: { tools: { status_page: { from: 'tool', tool: 'status_mirror' } } } }] }
    const config = await loadConfig(file)
    expect(() => createStackFromConfig(config, { tools: [] })).toThrow(/dispatch/)
  })
})

describe('hedging in a config file', () => {
  it('is named in the stack, and its hedges spend the stack’s shared retry budget', async () => {
    const clock = manualClock()
    let n = 0
    const search = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        await clock.sleep(++n === 1 ? 1000 : 10, signal)
        return n
      },
    })
    const retryBudget = memoryRetryBudget({ maxTokens: 50 })
    const config = await loadConfig({ stack: ['retry', { hedging: { delayMs: 100 } }] })
    const stack = createStackFromConfig(config, { tools: [search], clock, stores: { retryBudget } })
    const pending = stack.dispatch({ id: '1', name: 'search', args: {} })
    await clock.runAll()
    expect((await pending).value).toBe(2)
    expect(retryBudget.available()).toBe(46)
    await expect(loadConfig({ stack: [{ hedging: { effects: ['write'] } }] })).rejects.toThrow(/effects/)
  })
})

describe('redact in a config file', () => {
  it('is named in the stack with strategies and literal patterns, and refuses bad ones naming the option', async () => {
    const customer = defineTool({
      name: 'customer',
      description: 'customer',
      input: z.object({}),
      effect: 'read',
      execute: () => ({ email: 'ada@example.com', card: '4111 1111 1111 1111', note: 'Project Nightjar' }),
    })
    const file = { stack: [{ redact: { strategies: { card: 'mask' }, patterns: [{ name: 'codename', pattern: 'Project Nightjar' }] } }] }
    const stack = createStackFromConfig(await loadConfig(file), { tools: [customer] })
    const result = await stack.dispatch({ id: '1', name: 'customer', args: {} })
    expect(result.content).toBe('{"email":"[redacted:email]","card":"**** **** **** 1111","note":"[redacted:codename]"}')
    await expect(loadConfig({ stack: [{ redact: { strategy: 'erase' } }] })).rejects.toThrow(/strategy/)
  })
})

describe('coalesce in a config file', () => {
  it('is named in the stack: identical concurrent reads run once', async () => {
    const clock = manualClock()
    let runs = 0
    const search = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: (_args, { signal }) => {
        runs++
        return clock.sleep(100, signal).then(() => 'hits')
      },
    })
    const stack = createStackFromConfig(await loadConfig({ stack: ['retry', 'coalesce', 'timeout'] }), { tools: [search], clock })
    const calls = [1, 2, 3].map((n) => stack.dispatch({ id: `${n}`, name: 'search', args: { q: 'x' } }))
    await clock.runAll()
    expect((await Promise.all(calls)).map((r) => r.value)).toEqual(['hits', 'hits', 'hits'])
    expect(runs).toBe(1)
    await expect(loadConfig({ stack: [{ coalesce: { scope: 'tenant' } }] })).rejects.toThrow(/scope/)
  })
})
