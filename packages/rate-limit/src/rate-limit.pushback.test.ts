// The model side's shared pushback, through createAgent: a provider's Retry-After learned by one run holds
// the model for every run that shares the store, which waits it out within maxWaitMs (jittered) or is
// refused before it sends. Workers here are agents on one manual clock sharing a store.
import { createAgent, memoryCheckpoints, type RunOutcome } from '@shallot/agent'
import { type Layer, LoopError, type ModelAdapter, type ModelMiddleware, OptionsError, ToolError } from '@shallot/core'
import { retry } from '@shallot/retry'
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { MAX_PUSHBACK_MS, memoryPushbackStore, type PushbackStore, rateLimit, rateLimitDefinition } from './index.js'

const EPOCH = 1_800_000_000_000

/** A 429 as the error classifier and aiSdkModel leave it: the provider's status and its Retry-After. */
const pushedBack = (retryAfterMs: number, status = 429) =>
  new ToolError('rate_limited', 'rate limited by the provider (429)', {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    retryAfterMs,
    details: { status },
  })

/** A model named `gpt` of provider `openai` that fails with `failures` in order, then answers; it notes when it was asked. */
function model(clock: ManualClock, failures: unknown[] = []): ModelAdapter & { askedAt: number[] } {
  const askedAt: number[] = []
  return {
    name: 'gpt',
    provider: 'openai',
    askedAt,
    async generate() {
      askedAt.push(clock.now())
      const failure = failures[askedAt.length - 1]
      if (failure !== undefined) throw failure
      return { text: 'done', toolCalls: [] }
    },
  }
}

function worker(clock: ManualClock, layers: Array<ModelMiddleware | Layer>, failures: unknown[] = [], seed = 1) {
  const m = model(clock, failures)
  const agent = createAgent({ model: m, tools: [], clock, random: seededRandom(seed), modelMiddleware: layers })
  return { m, run: (signal?: AbortSignal) => agent.run(signal === undefined ? { input: 'go' } : { input: 'go', signal }) }
}

const stopOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

/** A store that counts what it was asked, around a memory store (or answers `heldFor` with `answer`). */
function watched(answer?: () => unknown): PushbackStore & { holds: Array<[string, number]>; reads: string[] } {
  const inner = memoryPushbackStore()
  const holds: Array<[string, number]> = []
  const reads: string[] = []
  return {
    holds,
    reads,
    hold(key, ms, now) {
      holds.push([key, ms])
      inner.hold(key, ms, now)
    },
    heldFor(key, now) {
      reads.push(key)
      return answer === undefined ? inner.heldFor(key, now) : (answer() as number)
    },
  }
}

describe('rateLimit({ pushback }): one worker learns a Retry-After, the others hold back', () => {
  it('refuses the other workers’ calls before they send while the hold lasts, then lets them go', async () => {
    const clock = manualClock()
    const store = watched()
    const a = worker(clock, [rateLimit({ limit: 1000, pushback: store })], [pushedBack(30_000)])
    const b = worker(clock, [rateLimit({ limit: 1000, pushback: store })])
    expect(stopOf(await a.run())?.kind).toBe('model_failed')
    expect(store.holds).toEqual([['model:openai:gpt', 30_000]])
    await clock.advance(10_000)
    const refused = stopOf(await b.run())
    expect(refused?.kind).toBe('model_failed')
    expect(refused?.cause).toMatchObject({ code: 'rate_limited', retryable: false, details: { key: 'model:openai:gpt', pushback: true } })
    // The rest of the hold (20 s) and its jitter, at most a tenth of it.
    const retryAfterMs = (refused?.cause as ToolError | undefined)?.retryAfterMs as number
    expect(retryAfterMs).toBeGreaterThanOrEqual(20_000)
    expect(retryAfterMs).toBeLessThanOrEqual(22_000)
    expect(b.m.askedAt).toEqual([])
    await clock.advance(20_000)
    expect((await b.run()).status).toBe('completed')
    expect(b.m.askedAt).toEqual([30_000])
  })

  it('three workers behind a retry: one learns a 30 s Retry-After, the other two send nothing until it passes, then all complete', async () => {
    const clock = manualClock()
    const store = memoryPushbackStore()
    // The layer inside retry sees every request the provider answers, so the first 429 is shared at once.
    const layers = () => [
      retry({ maxAttempts: 3, baseMs: 100, capMs: 1000 }),
      rateLimit({ limit: 1000, maxWaitMs: 60_000, pushback: store }),
    ]
    const workers = [1, 2, 3].map((seed, i) => worker(clock, layers(), i === 0 ? [pushedBack(30_000)] : [], seed))
    const first = (workers[0] as (typeof workers)[0]).run()
    await clock.advance(1)
    const others = workers.slice(1).map((w) => w.run())
    const outcomes = Promise.all([first, ...others])
    await clock.runAll()
    expect((await outcomes).map((o) => o.status)).toEqual(['completed', 'completed', 'completed'])
    const [learner, ...held] = workers.map((w) => w.m.askedAt)
    expect(learner).toEqual([0, 30_000])
    for (const asked of held) {
      expect(asked).toHaveLength(1)
      expect(asked[0]).toBeGreaterThanOrEqual(30_000)
      expect(asked[0]).toBeLessThanOrEqual(30_000 + 3_000)
    }
    // Jittered: the two held-back workers do not send at the same instant.
    expect(held[0]?.[0]).not.toBe(held[1]?.[0])
    expect(clock.pending).toBe(0)
  })

  it('spreads 50 held-back calls at once over the tenth of the hold after it ends, none before', async () => {
    const clock = manualClock()
    const store = memoryPushbackStore()
    store.hold('model:openai:gpt', 10_000, 0)
    const workers = Array.from({ length: 50 }, (_, i) =>
      worker(clock, [rateLimit({ limit: 1000, maxWaitMs: 20_000, pushback: store })], [], i + 1),
    )
    const outcomes = Promise.all(workers.map((w) => w.run()))
    await clock.runAll()
    expect((await outcomes).every((o) => o.status === 'completed')).toBe(true)
    const sent = workers.map((w) => w.m.askedAt[0] as number)
    expect(Math.min(...sent)).toBeGreaterThanOrEqual(10_000)
    expect(Math.max(...sent)).toBeLessThanOrEqual(11_000)
    expect(new Set(sent).size).toBeGreaterThan(40)
  })

  it('holds a key, not a model everywhere: another tenant’s key, another model and a __proto__ key are each their own', async () => {
    const clock = manualClock()
    const store = memoryPushbackStore()
    const byTenant = (tenant: string) =>
      rateLimit({
        limit: 1000,
        pushback: store,
        key: (ctx) => (tenant === '__proto__' ? '__proto__' : `${tenant}:${'model' in ctx ? ctx.model.name : ''}`),
      })
    const a = worker(clock, [byTenant('tenant-a')], [pushedBack(30_000)])
    expect(stopOf(await a.run())?.kind).toBe('model_failed')
    const sameTenant = worker(clock, [byTenant('tenant-a')])
    const otherTenant = worker(clock, [byTenant('tenant-b')])
    const proto = worker(clock, [byTenant('__proto__')], [pushedBack(5_000)])
    expect(stopOf(await sameTenant.run())?.cause).toMatchObject({ code: 'rate_limited', details: { pushback: true } })
    expect((await otherTenant.run()).status).toBe('completed')
    expect(stopOf(await proto.run())?.kind).toBe('model_failed')
    expect(store.heldFor('__proto__', clock.now())).toBe(5_000)
    expect(store.heldFor('tenant-b:gpt', clock.now())).toBe(0)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.getPrototypeOf({})).toBe(Object.prototype)
  })

  it('waits out a hold within maxWaitMs in the worker, abortably: a cancel ends the wait at once, asking nothing', async () => {
    const clock = manualClock()
    const store = memoryPushbackStore()
    store.hold('model:openai:gpt', 3_000, 0)
    const w = worker(clock, [rateLimit({ limit: 1000, maxWaitMs: 5_000, pushback: store })])
    const controller = new AbortController()
    const waiting = w.run(controller.signal)
    await clock.advance(1_000)
    expect(clock.pending).toBe(1)
    controller.abort()
    expect(stopOf(await waiting)?.kind).toBe('cancelled')
    expect(clock.pending).toBe(0)
    expect(w.m.askedAt).toEqual([])
  })

  it('ends a read of a silent store the moment the run is cancelled, asking nothing and leaving no timer', async () => {
    const clock = manualClock()
    const silent: PushbackStore = { hold() {}, heldFor: () => new Promise<number>(() => {}) }
    const w = worker(clock, [rateLimit({ limit: 1000, pushback: silent, storeTimeoutMs: 5_000 })])
    const controller = new AbortController()
    const reading = w.run(controller.signal)
    await clock.advance(1_000)
    controller.abort()
    expect(stopOf(await reading)?.kind).toBe('cancelled')
    expect(clock.pending).toBe(0)
    expect(w.m.askedAt).toEqual([])
  })

  it('learns only what a provider said: not a refusal of its own, a failure without a status, a fatal one, or a 200 answer', async () => {
    const clock = manualClock()
    const store = watched()
    const noStatus = new ToolError('rate_limited', 'slow down', { category: 'transient', retryable: true, retryAfterMs: 30_000 })
    const fatal = new ToolError('permission_denied', 'no', { category: 'fatal', retryAfterMs: 30_000, details: { status: 403 } })
    const hard = new LoopError('model_failed', 'a layer ended it', { details: { status: 429, retryAfterMs: 30_000 } })
    for (const failure of [
      noStatus,
      fatal,
      hard,
      pushedBack(0),
      pushedBack(Number.NaN),
      Object.assign(new Error('429'), { status: 429 }),
    ]) {
      await worker(clock, [rateLimit({ limit: 1000, pushback: store })], [failure]).run()
    }
    // The limit's own refusal, 1 call a minute: refused before it is sent, and never shared as the provider's word.
    const limited = worker(clock, [rateLimit({ limit: 1, perMs: 60_000, maxWaitMs: 0, pushback: store })])
    await limited.run()
    expect(stopOf(await limited.run())?.cause).toMatchObject({ code: 'rate_limited', retryAfterMs: 60_000 })
    expect(store.holds).toEqual([])
  })

  it('learns a 503’s Retry-After, and holds a pushback past MAX_PUSHBACK_MS for MAX_PUSHBACK_MS', async () => {
    const clock = manualClock()
    const store = watched()
    await worker(clock, [rateLimit({ limit: 1000, pushback: store })], [pushedBack(7_000, 503)]).run()
    await worker(clock, [rateLimit({ limit: 1000, pushback: store, key: () => 'other' })], [pushedBack(86_400_000)]).run()
    expect(store.holds).toEqual([
      ['model:openai:gpt', 7_000],
      ['other', MAX_PUSHBACK_MS],
    ])
  })

  it('shares nothing with pushback: false', async () => {
    const clock = manualClock()
    const layer = rateLimit({ limit: 1000, pushback: false })
    await worker(clock, [layer], [pushedBack(30_000)]).run()
    const b = worker(clock, [layer])
    expect((await b.run()).status).toBe('completed')
  })

  it('shares within one layer by default: the runs of one process hold back together', async () => {
    const clock = manualClock()
    const layer = rateLimit({ limit: 1000 })
    await worker(clock, [layer], [pushedBack(30_000)]).run()
    const b = worker(clock, [layer])
    expect(stopOf(await b.run())?.cause).toMatchObject({ details: { pushback: true } })
    expect(b.m.askedAt).toEqual([])
  })

  it('parks a run with park when the hold is past park.afterMs: the run wakes when the hold ends and asks the model', async () => {
    const clock = manualClock()
    const store = memoryPushbackStore()
    store.hold('model:openai:gpt', 120_000, 0)
    const m = model(clock)
    const agent = createAgent({
      model: m,
      tools: [],
      clock,
      random: seededRandom(7),
      checkpoints: memoryCheckpoints(),
      park: { afterMs: 10_000, wallNow: () => EPOCH + clock.now() },
      modelMiddleware: [rateLimit({ limit: 1000, pushback: store })],
    })
    const parked = await agent.run({ input: 'go', runId: 'p1' })
    expect(parked).toMatchObject({ status: 'parked', reason: { code: 'rate_limited', model: 'gpt' } })
    const wakeAt = parked.status === 'parked' ? parked.wakeAt : 0
    expect(wakeAt).toBeGreaterThanOrEqual(EPOCH + 120_000)
    expect(wakeAt).toBeLessThanOrEqual(EPOCH + 132_000)
    await clock.advance(wakeAt - EPOCH)
    expect(await agent.resume('p1')).toMatchObject({ status: 'completed' })
    expect(m.askedAt).toEqual([wakeAt - EPOCH])
  })

  it('refuses a pushback option that is not a store, naming it', () => {
    expect(() => rateLimit({ limit: 1, pushback: {} as never })).toThrow(OptionsError)
    expect(() => rateLimit({ limit: 1, pushback: { hold() {} } as never })).toThrow(
      /option pushback: must be a PushbackStore \{ hold\(key, ms, now\), heldFor\(key, now\) \}/,
    )
  })

  it('takes the host’s shared pushback store in the definition (env.stores.pushback)', async () => {
    const clock = manualClock()
    const store = watched()
    const layer = rateLimitDefinition.buildModel({ limit: 5 }, { stores: { pushback: store } } as never)
    await worker(clock, [layer], [pushedBack(2_000)]).run()
    expect(store.holds).toEqual([['model:openai:gpt', 2_000]])
    expect(store.reads).toEqual(['model:openai:gpt'])
  })
})
