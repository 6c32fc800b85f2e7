import { createAgent, type RunOutcome } from '@shallot/agent'
import type { Layer, ModelAdapter, ModelMiddleware } from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { modelRateKey, type RateLimitStore, rateLimit, rateLimitDefinition } from './index.js'

/** A model that answers at once and remembers when it was asked, on the manual clock. */
function model(clock: ManualClock, name = 'gpt', provider?: string): ModelAdapter & { askedAt: number[] } {
  const askedAt: number[] = []
  return {
    name,
    ...(provider === undefined ? {} : { provider }),
    askedAt,
    async generate() {
      askedAt.push(clock.now())
      return { text: 'done', toolCalls: [] }
    },
  }
}

function agentOf(layers: Array<ModelMiddleware | Layer>) {
  const clock = manualClock()
  const m = model(clock)
  const agent = createAgent({ model: m, tools: [], clock, modelMiddleware: layers })
  return { clock, m, run: (signal?: AbortSignal) => agent.run(signal === undefined ? { input: 'go' } : { input: 'go', signal }) }
}

const errorOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

describe('rateLimit()', () => {
  it('spaces model calls by the limit, each waiting its turn within maxWaitMs', async () => {
    const { clock, m, run } = agentOf([rateLimit({ limit: 1, perMs: 1000, maxWaitMs: 2000 })])
    const runs = Promise.all([run(), run(), run()])
    await clock.runAll()
    expect((await runs).map((o) => o.status)).toEqual(['completed', 'completed', 'completed'])
    expect(m.askedAt).toEqual([0, 1000, 2000])
    expect(clock.pending).toBe(0)
  })

  it('refuses a call whose turn is past maxWaitMs before the provider is asked: the run ends model_failed naming rate_limited', async () => {
    const { clock, m, run } = agentOf([rateLimit({ limit: 1, perMs: 60_000, maxWaitMs: 1000 })])
    expect((await run()).status).toBe('completed')
    const refused = errorOf(await run())
    expect(refused?.kind).toBe('model_failed')
    expect(refused?.message).toContain("model 'gpt' is rate limited to 1 call per 60s")
    expect(refused?.cause).toMatchObject({ code: 'rate_limited', retryable: false, retryAfterMs: 60_000 })
    expect(m.askedAt).toEqual([0])
    await clock.advance(60_000)
    expect((await run()).status).toBe('completed')
  })

  it('ends a wait the moment the run is cancelled, leaving no timer and asking nothing', async () => {
    const { clock, m, run } = agentOf([rateLimit({ limit: 1, perMs: 1000, maxWaitMs: 5000 })])
    await run()
    const controller = new AbortController()
    const waiting = run(controller.signal)
    await clock.advance(100)
    expect(clock.pending).toBe(1)
    controller.abort()
    expect(errorOf(await waiting)?.kind).toBe('cancelled')
    expect(clock.pending).toBe(0)
    expect(m.askedAt).toEqual([0])
  })

  it('keys by model and provider by default', () => {
    expect(modelRateKey({ name: 'gpt-4o', provider: 'openai' })).toBe('model:openai:gpt-4o')
    expect(modelRateKey({ name: '__proto__' })).toBe('model:__proto__')
  })

  it('fails open or closed on a store that rejects, as onStoreFailure says', async () => {
    const broken: RateLimitStore = { acquire: () => Promise.reject(new Error('ECONNREFUSED')) }
    const open = agentOf([rateLimit({ limit: 1, store: broken })])
    expect((await open.run()).status).toBe('completed')
    const closed = agentOf([rateLimit({ limit: 1, store: broken, onStoreFailure: 'closed' })])
    const stopped = errorOf(await closed.run())
    expect(stopped?.cause).toMatchObject({ code: 'store_unavailable' })
    expect(closed.m.askedAt).toEqual([])
  })

  it('is built from the same options by the definition, with the host’s shared store', async () => {
    const asked: string[] = []
    const store: RateLimitStore = {
      acquire: (key) => {
        asked.push(key)
        return { admitted: true, waitMs: 0 }
      },
    }
    const { run } = agentOf([rateLimitDefinition.buildModel({ limit: 5 }, { stores: { rateLimit: store } })])
    await run()
    expect(asked).toEqual(['model:gpt'])
    expect(rateLimitDefinition.handles).toEqual({ tools: true, models: true })
  })
})
