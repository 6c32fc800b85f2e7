import { createAgent, type RunOutcome } from '@shallot/agent'
import { defineTool, type ModelAdapter, OptionsError } from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RateLimitStore, rateLimit } from './index.js'

const errorOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

/** A model that asks for `search` on its first `searches` turns, then answers; it remembers when it was asked. */
function searcher(clock: ManualClock, searches: number): ModelAdapter & { askedAt: number[] } {
  const askedAt: number[] = []
  return {
    name: 'gpt',
    askedAt,
    async generate() {
      askedAt.push(clock.now())
      return askedAt.length <= searches
        ? { toolCalls: [{ id: `c${askedAt.length}`, name: 'search', args: { q: `${askedAt.length}` } }] }
        : { text: 'done', toolCalls: [] }
    },
  }
}

function searchTool(clock: ManualClock) {
  const ranAt: number[] = []
  const tool = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => ranAt.push(clock.now()),
  })
  return { tool, ranAt }
}

describe('rateLimit(): one layer, listed in both lists of one agent', () => {
  it('its tool side refuses the tool softly and its model side waits for the model, each with its own buckets', async () => {
    const clock = manualClock()
    const search = searchTool(clock)
    const model = searcher(clock, 3)
    // One call per second; a tool call never waits, a model call waits up to 5 s.
    const limit = rateLimit({ limit: 1, perMs: 1_000, burst: 1, maxWaitMs: 0 })
    const paced = rateLimit({ limit: 1, perMs: 1_000, burst: 1, maxWaitMs: 5_000 })
    const agent = createAgent({ model, tools: [search.tool], clock, middleware: [limit], modelMiddleware: [paced] })
    const outcome = agent.run({ input: 'go' })
    await clock.runAll()
    expect(await outcome).toMatchObject({ status: 'completed', output: 'done' })
    // Model side, as rateLimitModel() did: one request a second, each waiting its turn.
    expect(model.askedAt).toEqual([0, 1000, 2000, 3000])
    // Tool side, as rateLimit() did: each search is its bucket's first in its second, so none is refused.
    expect(search.ranAt).toEqual([0, 1000, 2000])

    // The same layer in both lists, one key for every call of the run: the model's requests still do not take the tool's places.
    const both = rateLimit({ limit: 1, perMs: 1_000, burst: 1, maxWaitMs: 0, key: (ctx) => `tenant:${ctx.run.id}` })
    const again = searchTool(clock)
    const refused = await createAgent({
      model: searcher(clock, 1),
      tools: [again.tool],
      clock,
      middleware: [both],
      modelMiddleware: [both],
    }).run({
      input: 'go',
    })
    // The first model call and the search both ran at once; the second model call found its bucket spent.
    expect(again.ranAt).toHaveLength(1)
    expect(errorOf(refused)?.cause).toMatchObject({ code: 'rate_limited' })
  })

  it('a shared store holds both sides’ buckets, apart by key', async () => {
    const clock = manualClock()
    const keys: string[] = []
    const store: RateLimitStore = {
      acquire: (key) => {
        keys.push(key)
        return { admitted: true, waitMs: 0 }
      },
    }
    const layer = rateLimit({ limit: 10, store })
    const search = searchTool(clock)
    await createAgent({ model: searcher(clock, 1), tools: [search.tool], clock, middleware: [layer], modelMiddleware: [layer] }).run({
      input: 'go',
    })
    expect(keys).toEqual(['model:gpt', 'tool:search', 'model:gpt'])
  })

  it('hands key the tool call’s context on the tool side and the model call’s on the model side', async () => {
    const clock = manualClock()
    const seen: string[] = []
    const layer = rateLimit({
      limit: 10,
      key: (ctx) => {
        seen.push('call' in ctx ? `tool ${ctx.call.name}` : `model ${ctx.model.name}`)
        return `tenant:${ctx.run.id}`
      },
    })
    const search = searchTool(clock)
    await createAgent({ model: searcher(clock, 1), tools: [search.tool], clock, middleware: [layer], modelMiddleware: [layer] }).run({
      input: 'go',
    })
    expect(seen).toEqual(['model gpt', 'tool search', 'model gpt'])
  })
})

describe('rateLimit(): options', () => {
  it.each([
    [{ limit: 5, modelKey: () => 'm' }, /unknown option "modelKey"/],
    [JSON.parse('{"limit": 5, "__proto__": {"limit": 1}}'), /unknown option "__proto__"/],
    [{ limit: Number.NaN }, /option limit/],
    [{ limit: Number.POSITIVE_INFINITY }, /option limit/],
    [{ limit: -1 }, /option limit/],
    [{ limit: 5, perMs: Number.NaN }, /option perMs/],
    [{ limit: 5, maxWaitMs: Number.POSITIVE_INFINITY }, /option maxWaitMs/],
    [{ limit: 5, storeTimeoutMs: -1 }, /option storeTimeoutMs/],
    [{ limit: 5, per: 'model' }, /option per/],
  ])('refuses %j with an OptionsError naming it, for both sides at once', (options, message) => {
    expect(() => rateLimit(options as never)).toThrow(OptionsError)
    expect(() => rateLimit(options as never)).toThrow(message)
  })

  it('a key function that throws fails a model call with a TypeError naming key(ctx), before the provider is asked', async () => {
    const clock = manualClock()
    const model = searcher(clock, 0)
    const layer = rateLimit({
      limit: 1,
      key: () => {
        throw new Error('no tenant')
      },
    })
    const outcome = await createAgent({ model, tools: [], clock, modelMiddleware: [layer] }).run({ input: 'go' })
    expect(errorOf(outcome)?.message).toMatch(/rateLimit\(\): key\(ctx\) threw: no tenant/)
    expect(model.askedAt).toEqual([])
  })
})
