import { fileURLToPath } from 'node:url'
import { type AgentEvent, createAgent } from '@shallot/agent'
import { createStackFromConfig, loadConfig } from '@shallot/config'
import { defineTool, type ModelAdapter, type StackEvent, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

// The example config beside package.json names this package; @shallot/config imports it by that name.
const file = fileURLToPath(new URL('../shallot.yaml', import.meta.url))

describe('shallot.yaml', () => {
  it('loads this package by name, with the options the file gives it', async () => {
    const config = await loadConfig(file)
    expect(config.layers.map((l) => l.name)).toEqual(['panic-catcher', 'retry', '@acme/shallot-rate-limit', 'timeout'])
    expect(config.layers[2]?.base.raw).toEqual({ rps: 5, burst: 2 })
    expect(config.modelLayers.map((l) => l.name)).toEqual(['retry', '@acme/shallot-rate-limit'])
  })

  it('wraps both kinds of call of an agent: a tool over its bucket and a model over its own are waited out by retry', async () => {
    const clock = manualClock()
    const tool = (name: string) => defineTool({ name, description: name, input: z.object({}), effect: 'read', execute: async () => 'ok' })
    const stack = createStackFromConfig(await loadConfig(file), { tools: [tool('search'), tool('send_email')], clock })
    // Three searches at once (the tool's burst is 2), then two more turns (the model's burst is 1, one a second).
    const search = (id: string) => ({ id, name: 'search', args: {} })
    const script = [{ toolCalls: [search('a'), search('b'), search('c')] }, { toolCalls: [search('d')] }, { text: 'done' }]
    const asked: number[] = []
    const model: ModelAdapter = {
      name: 'm',
      generate: async () => {
        asked.push(clock.now())
        return script[asked.length - 1] ?? { text: 'done' }
      },
    }
    const modelRetries: AgentEvent[] = []
    const toolRefusals: StackEvent[] = []
    stack.on((e) => e.type === 'rate_limit.refused' && toolRefusals.push(e))
    const agent = createAgent({
      model,
      stack,
      modelMiddleware: stack.modelMiddleware,
      clock,
      onEvent: (e) => e.type === 'model.retry' && modelRetries.push(e),
    })
    let settled = false
    const run = agent.run({ input: 'search' }).finally(() => (settled = true))
    while (!settled) await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'done' })
    // Each model call after the first waited for its token: no two reached the model within a second.
    expect(asked).toHaveLength(3)
    for (let i = 1; i < asked.length; i++) expect((asked[i] ?? 0) - (asked[i - 1] ?? 0)).toBeGreaterThanOrEqual(1000)
    expect(modelRetries.length).toBeGreaterThan(0)
    for (const e of modelRetries) expect(e.type === 'model.retry' && e.error).toMatch(/^rate limited .*Retry-After/)
    // The third search of the first turn was refused by the tool's bucket, then retried.
    expect(toolRefusals.length).toBeGreaterThan(0)
  })

  it('runs in the stack: retry waits out the refusal, send_email gets its own stricter limit', async () => {
    const clock = manualClock()
    const tool = (name: string) =>
      defineTool({ name, description: name, input: z.object({}), effect: 'idempotent', execute: async () => `${name} ok` })
    const stack = createStackFromConfig(await loadConfig(file), { tools: [tool('search'), tool('send_email')], clock })
    let ids = 0
    const call = async (name: string): Promise<ToolResult> => {
      const pending = stack.dispatch({ id: `c${++ids}`, name, args: {} })
      await clock.runAll()
      return pending
    }
    const searches = [await call('search'), await call('search'), await call('search')]
    expect(searches.map((r) => [r.ok, r.attempts])).toEqual([
      [true, 1],
      [true, 1],
      [true, 2],
    ])
    const searchRetry = searches[2]?.trace.find((e) => e.type === 'retry.scheduled')
    expect(searchRetry).toMatchObject({ code: 'rate_limited' })
    expect(searchRetry?.delayMs).toBeGreaterThanOrEqual(200)
    const emails = [await call('send_email'), await call('send_email')]
    expect(emails.map((r) => [r.ok, r.attempts])).toEqual([
      [true, 1],
      [true, 2],
    ])
    expect(emails[1]?.trace.find((e) => e.type === 'retry.scheduled')?.delayMs).toBeGreaterThanOrEqual(1000)
  })
})
