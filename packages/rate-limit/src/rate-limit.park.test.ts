import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, type ModelAdapter } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { rateLimit } from './index.js'

/** A model that asks `search` once per turn for `turns` turns, then answers. */
function searching(turns: number): ModelAdapter {
  let asked = 0
  return {
    async generate() {
      asked++
      return asked <= turns
        ? { toolCalls: [{ id: `s${asked}`, name: 'search', args: { q: `q${asked}` } }] }
        : { text: 'done', toolCalls: [] }
    },
  }
}

function agentWith(limit: { limit: number; perMs: number; maxWaitMs: number }) {
  const clock = manualClock()
  const ran: number[] = []
  const search = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => {
      ran.push(clock.now())
      return `found ${q}`
    },
  })
  const agent = createAgent({
    model: searching(2),
    tools: [search],
    clock,
    middleware: [rateLimit(limit)],
    checkpoints: memoryCheckpoints(),
    park: { afterMs: 5_000, wallNow: () => 1_800_000_000_000 + clock.now() },
  })
  return { agent, clock, ran }
}

describe('rateLimit and park', () => {
  it('a turn farther away than maxWaitMs parks the run (retryAfterMs ≥ park.afterMs) instead of holding the worker', async () => {
    const { agent, ran } = agentWith({ limit: 1, perMs: 60_000, maxWaitMs: 1_000 })
    const outcome = await agent.run({ input: 'search twice' })
    expect(outcome.status).toBe('parked')
    expect(outcome.status === 'parked' && outcome.reason).toMatchObject({ code: 'rate_limited', tool: 'search', waitMs: 60_000 })
    expect(ran).toEqual([0])
  })

  it('a turn within maxWaitMs (below park.afterMs) is waited for in the worker, and the run completes', async () => {
    const { agent, clock, ran } = agentWith({ limit: 1, perMs: 800, maxWaitMs: 1_000 })
    const running = agent.run({ input: 'search twice' })
    await clock.runAll()
    expect((await running).status).toBe('completed')
    expect(ran).toEqual([0, 800])
  })

  it('a model call whose turn is farther away than maxWaitMs parks the run before the call; the resume asks the model', async () => {
    const clock = manualClock()
    const askedAt: number[] = []
    const model: ModelAdapter = {
      name: 'gpt',
      async generate() {
        askedAt.push(clock.now())
        return { text: 'done', toolCalls: [] }
      },
    }
    const agent = createAgent({
      model,
      tools: [],
      clock,
      modelMiddleware: [rateLimit({ limit: 1, perMs: 60_000, maxWaitMs: 1_000 })],
      checkpoints: memoryCheckpoints(),
      park: { afterMs: 5_000, wallNow: () => 1_800_000_000_000 + clock.now() },
    })
    expect((await agent.run({ input: 'one' })).status).toBe('completed')
    const parked = await agent.run({ input: 'two', runId: 'two' })
    expect(parked).toMatchObject({
      status: 'parked',
      wakeAt: 1_800_000_060_000,
      reason: { code: 'rate_limited', model: 'gpt', waitMs: 60_000 },
    })
    await clock.advance(60_000)
    expect(await agent.resume('two')).toMatchObject({ status: 'completed', output: 'done' })
    expect(askedAt).toEqual([0, 60_000])
  })
})
