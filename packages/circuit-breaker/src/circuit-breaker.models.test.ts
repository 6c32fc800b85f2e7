import { type AgentEvent, createAgent, type RunOutcome } from '@shallot/agent'
import {
  type Layer,
  LoopError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import {
  type BreakerState,
  type BreakerStore,
  circuitBreaker,
  circuitBreakerDefinition,
  consecutive,
  memoryBreakerStore,
  modelBreakerKey,
  sampling,
} from './index.js'

type Step = ModelResponse | Error | 'hang'

/** A model that plays `steps` in order (the last again and again); 'hang' answers only its signal's abort. */
function scripted(name: string, steps: Step[], provider?: string): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    name,
    ...(provider === undefined ? {} : { provider }),
    requests,
    generate(request) {
      const step = steps[Math.min(requests.length, steps.length - 1)] as Step
      requests.push(request)
      if (step === 'hang') {
        const { signal } = request
        return new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
      }
      return step instanceof Error ? Promise.reject(step) : Promise.resolve(step)
    },
  }
}

const overloaded = () =>
  new ToolError('overloaded', 'the model provider is overloaded (529 overloaded_error): Overloaded', {
    category: 'transient',
    retryable: true,
    details: { status: 529, providerMessage: 'Overloaded' },
  })
const badRequest = () => Object.assign(new Error('bad field'), { status: 400 })
const answer = (text: string): ModelResponse => ({ text, toolCalls: [] })
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/** An agent of one model behind `layers`, on a manual clock, with its model.circuit events. */
function agentOf(model: ModelAdapter, layers: Array<ModelMiddleware | Layer>, clock: ManualClock = manualClock()) {
  const events: AgentEvent[] = []
  const agent = createAgent({
    model,
    tools: [],
    clock,
    modelMiddleware: layers,
    onEvent: (e) => e.type === 'model.circuit' && events.push(e),
  })
  return {
    agent,
    clock,
    events,
    run: (input = 'go', signal?: AbortSignal) => agent.run(signal === undefined ? { input } : { input, signal }),
  }
}

const errorOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

describe('circuitBreaker()', () => {
  it('opens after threshold failures and then fails fast, asking the model nothing, with model.circuit events', async () => {
    const m = scripted('gpt', [overloaded()], 'openai')
    const { run, events } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 1000 })])
    expect(errorOf(await run())?.kind).toBe('model_failed')
    expect(errorOf(await run())?.kind).toBe('model_failed')
    expect(events).toMatchObject([{ type: 'model.circuit', model: 'gpt', from: 'closed', to: 'open', reason: '2 consecutive failures' }])
    const refused = errorOf(await run())
    expect(m.requests).toHaveLength(2)
    expect(refused?.message).toBe(
      "the model call failed after 1 attempt: model 'gpt' skipped: circuit open after 2 failures (1000 ms left)",
    )
    expect(refused?.cause).toMatchObject({ code: 'circuit_open', retryable: false, retryAfterMs: 1000 })
  })

  it('lets one probe through after the cooldown on the manual clock: success closes, failure reopens for another cooldown', async () => {
    const m = scripted('gpt', [overloaded(), overloaded(), overloaded(), answer('back')])
    const { run, clock, events } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 1000 })])
    await run()
    await run()
    await clock.advance(999)
    await run()
    expect(m.requests).toHaveLength(2)
    await clock.advance(1)
    expect(errorOf(await run())?.kind).toBe('model_failed') // the probe fails: open again, from now
    await clock.advance(999)
    await run()
    expect(m.requests).toHaveLength(3)
    await clock.advance(1)
    expect(await run()).toMatchObject({ status: 'completed', output: 'back' })
    expect(events.map((e) => e.type === 'model.circuit' && `${e.from}>${e.to}`)).toEqual([
      'closed>open',
      'open>half-open',
      'half-open>open',
      'open>half-open',
      'half-open>closed',
    ])
  })

  it('does not count a bad request, a LoopError (passed through as the same object) or the run being cancelled', async () => {
    const hard = new LoopError('context_exceeded', 'too long')
    const m = scripted('gpt', [badRequest(), badRequest(), hard, hard, 'hang', 'hang', answer('still closed')])
    const { run } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 2 }) })])
    expect(errorOf(await run())?.message).toBe('the model call failed after 1 attempt: bad field')
    await run()
    expect(errorOf(await run())).toBe(hard)
    await run()
    for (let i = 0; i < 2; i++) {
      const controller = new AbortController()
      const pending = run('go', controller.signal)
      await flush()
      controller.abort(new Error('user gave up'))
      expect(errorOf(await pending)?.kind).toBe('cancelled')
    }
    expect(await run()).toMatchObject({ status: 'completed', output: 'still closed' })
  })

  it('50 parallel runs share one breaker: once open none reaches the model; after the cooldown exactly one probe does', async () => {
    const clock = manualClock()
    let mode: 'fail' | 'ok' = 'fail'
    let asked = 0
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const m: ModelAdapter = {
      name: 'gpt',
      async generate() {
        asked++
        if (mode === 'fail') throw overloaded()
        await gate
        return answer('ok')
      },
    }
    const { agent } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 1000 })], clock)
    const wave = () => Promise.all(Array.from({ length: 50 }, (_, i) => agent.run({ input: `r${i}` })))
    // All 50 are admitted while closed, and all fail: the circuit opens once.
    expect((await wave()).every((o) => o.status === 'stopped')).toBe(true)
    expect(asked).toBe(50)
    await wave()
    expect(asked).toBe(50)
    await clock.advance(1000)
    mode = 'ok'
    const probing = wave()
    await flush()
    release()
    const outcomes = await probing
    expect(asked).toBe(51)
    expect(outcomes.filter((o) => o.status === 'completed')).toHaveLength(1)
    expect(
      outcomes.filter((o) => {
        const cause = errorOf(o)?.cause
        return ToolError.is(cause) && cause.code === 'circuit_open'
      }),
    ).toHaveLength(49)
  })

  it('keeps one breaker per agent: the same layer in two agents does not share state; a shared store does', async () => {
    const layer = circuitBreaker({ policy: consecutive({ threshold: 1 }) })
    const a = agentOf(scripted('gpt', [overloaded()]), [layer])
    const healthy = scripted('gpt', [answer('fine')])
    const b = agentOf(healthy, [layer])
    await a.run()
    expect(await b.run()).toMatchObject({ status: 'completed' })

    const store = memoryBreakerStore()
    const fleet = (model: ModelAdapter) => agentOf(model, [circuitBreaker({ policy: consecutive({ threshold: 1 }), store })])
    await fleet(scripted('gpt', [overloaded()], 'openai')).run()
    const other = scripted('gpt', [answer('never')], 'openai')
    expect(errorOf(await fleet(other).run())?.cause).toMatchObject({ code: 'circuit_open' })
    expect(other.requests).toHaveLength(0)
    expect(((await store.get('model:openai:gpt')) as BreakerState).circuit).toBe('open')
  })

  it('with a shared store, asks it nothing for a model it read closed within storeRefreshMs, and sees an opening after it', async () => {
    const shared = memoryBreakerStore()
    const asked = { get: 0, update: 0 }
    const store: BreakerStore = {
      get: async (key) => {
        asked.get++
        return shared.get(key)
      },
      update: async (key, change) => {
        asked.update++
        return shared.update(key, change)
      },
    }
    const clock = manualClock()
    const healthy = scripted('gpt', [answer('fine')], 'openai')
    const a = agentOf(healthy, [circuitBreaker({ policy: consecutive({ threshold: 1 }), store })], clock)
    for (let i = 0; i < 5; i++) expect(await a.run()).toMatchObject({ status: 'completed' })
    expect(asked).toEqual({ get: 1, update: 0 })
    await agentOf(
      scripted('gpt', [overloaded()], 'openai'),
      [circuitBreaker({ policy: consecutive({ threshold: 1 }), store })],
      clock,
    ).run()
    expect(shared.peek('model:openai:gpt')?.circuit).toBe('open')
    expect(await a.run()).toMatchObject({ status: 'completed' }) // the view is 0 ms old: the staleness storeRefreshMs buys
    await clock.advance(1000)
    expect(errorOf(await a.run())?.cause).toMatchObject({ code: 'circuit_open' })
    expect(healthy.requests).toHaveLength(6)
  })

  it('keys by provider and name, apart from a tool of the same name in a shared store; a key function may bypass', async () => {
    expect(modelBreakerKey({ name: 'gpt-4o', provider: 'openai' })).toBe('model:openai:gpt-4o')
    expect(modelBreakerKey({ name: 'search' })).toBe('model:search')
    const m = scripted('gpt', [overloaded(), answer('through')])
    const { run } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 1 }), key: () => undefined })])
    await run()
    expect(await run()).toMatchObject({ status: 'completed', output: 'through' })
    const bad = agentOf(m, [circuitBreaker({ key: () => 42 as unknown as string })])
    expect(errorOf(await bad.run())?.message).toMatch(/option key must return a string or undefined, got number/)
  })

  it('counts each request a retry layer inside made, and stretches the cooldown to a longer Retry-After', async () => {
    const limited = new ToolError('rate_limited', 'slow down', { category: 'transient', retryable: true, retryAfterMs: 5000 })
    const m = scripted('gpt', [limited])
    const twice: ModelMiddleware = async (ctx, next) => {
      try {
        await next()
      } catch {
        ctx.attempt++
        await next()
      }
    }
    const { run, clock } = agentOf(m, [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 1000 }), twice])
    await run()
    expect(m.requests).toHaveLength(2)
    await clock.advance(4999)
    expect(errorOf(await run())?.cause).toMatchObject({ code: 'circuit_open', retryAfterMs: 1 })
  })

  it('refuses garbage options naming the option; the definition builds a model layer with a sampling policy from a file', () => {
    expect(() => circuitBreaker({ cooldownMs: -1 })).toThrow(OptionsError)
    expect(() => circuitBreaker({ key: 'gpt' as never })).toThrow(/key/)
    expect(() => circuitBreaker({ halfOpenProbes: 1, halfOpenSuccesses: 2 })).toThrow(/halfOpenSuccesses/)
    expect(() => circuitBreaker({ lifetime: 'run', store: memoryBreakerStore() })).toThrow(/store/)
    expect(circuitBreakerDefinition.handles).toEqual({ tools: true, models: true })
    expect(typeof circuitBreakerDefinition.buildModel({ policy: { sampling: { failureRatio: 0.5 } } })).toBe('function')
    expect(typeof circuitBreaker({ policy: sampling({ failureRatio: 0.5 }) }).wrapModelCall).toBe('function')
  })
})
