import { type AgentEvent, createAgent, type RunOutcome } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import {
  defineTool,
  type Layer,
  LoopError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallback, fallbackDefinition } from './index.js'

type Step = ModelResponse | Error | 'hang'

/** A model that plays `steps` in order (the last again and again); 'hang' answers only its signal's abort. */
function scripted(name: string, steps: Step[]): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    name,
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
const answer = (text: string): ModelResponse => ({ text, toolCalls: [] })
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))
const errorOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

function agentOf(model: ModelAdapter, layers: Array<ModelMiddleware | Layer>) {
  const events: AgentEvent[] = []
  const agent = createAgent({
    model,
    tools: [],
    clock: manualClock(),
    modelMiddleware: layers,
    onEvent: (e) => (e.type === 'model.fallback' || e.type === 'model.call') && events.push(e),
  })
  return { agent, events, run: (signal?: AbortSignal) => agent.run(signal === undefined ? { input: 'go' } : { input: 'go', signal }) }
}

describe('fallback()', () => {
  it('asks the next model when one is down, from attempt 1, with a model.fallback event; the request is the same', async () => {
    const a = scripted('a', [overloaded()])
    const b = scripted('b', [overloaded()])
    const c = scripted('c', [answer('from c')])
    const { run, events } = agentOf(a, [fallback({ models: [b, c] })])
    expect(await run()).toMatchObject({ status: 'completed', output: 'from c' })
    expect(
      events.map((e) =>
        e.type === 'model.fallback' ? `${e.from}>${e.to}` : e.type === 'model.call' ? `${e.type}:${e.model}:${e.attempt}` : e.type,
      ),
    ).toEqual(['model.call:a:1', 'a>b', 'model.call:b:1', 'b>c', 'model.call:c:1'])
    expect(events[1]).toMatchObject({ reason: 'a: 529 the provider is overloaded (Overloaded)' })
    expect(c.requests[0]?.messages).toEqual(a.requests[0]?.messages)
  })

  it('ends as fallback_exhausted when every model fails, naming each, its attempts and last error; the cause is the last failure', async () => {
    const last = Object.assign(new Error('Service Unavailable'), { status: 503 })
    const { run } = agentOf(scripted('a', [overloaded()]), [fallback({ models: [scripted('b', [last])] })])
    const error = errorOf(await run())
    expect(error?.kind).toBe('fallback_exhausted')
    expect(error?.message).toBe('every model of the chain was unavailable (a, b)')
    expect(error?.details).toEqual({
      models: [
        { model: 'a', attempts: 1, circuit: 'none', error: '529 the provider is overloaded (Overloaded)' },
        { model: 'b', attempts: 1, circuit: 'none', error: '503 Service Unavailable' },
      ],
      failure: 'a: 529 the provider is overloaded (Overloaded); b: 503 Service Unavailable',
    })
    expect(error?.cause).toBe(last)
  })

  it('passes a LoopError through as the same object and ends on a failure that is not transient, without asking the next model', async () => {
    const hard = new LoopError('context_exceeded', 'too long')
    const b = scripted('b', [answer('never')])
    expect(errorOf(await agentOf(scripted('a', [hard]), [fallback({ models: [b] })]).run())).toBe(hard)
    const bad = Object.assign(new Error('bad field'), { status: 400 })
    const refused = errorOf(await agentOf(scripted('a', [bad]), [fallback({ models: [b] })]).run())
    expect(refused).toMatchObject({
      kind: 'model_failed',
      message: 'the model call failed after 1 attempt: bad field',
      details: { model: 'a' },
    })
    expect(b.requests).toHaveLength(0)
  })

  it('stops mid-chain when the run is cancelled: while the spare is asked, or as the primary fails, no model is asked after', async () => {
    const controller = new AbortController()
    const b = scripted('b', ['hang'])
    const c = scripted('c', [answer('never')])
    const pending = agentOf(scripted('a', [overloaded()]), [fallback({ models: [b, c] })]).run(controller.signal)
    await flush()
    expect(b.requests).toHaveLength(1)
    controller.abort(new Error('user gave up'))
    expect(errorOf(await pending)?.kind).toBe('cancelled')

    const late = new AbortController()
    const a: ModelAdapter = {
      name: 'a',
      generate: () => {
        late.abort(new Error('user gave up'))
        return Promise.reject(overloaded())
      },
    }
    expect(errorOf(await agentOf(a, [fallback({ models: [c] })]).run(late.signal))?.kind).toBe('cancelled')
    expect(c.requests).toHaveLength(0)
  })

  it('hostile lists: a spare listed twice is refused naming it; the primary listed again is not asked twice; __proto__ is just a name', async () => {
    const b = scripted('b', [answer('b')])
    expect(() => fallback({ models: [b, b] })).toThrow(/models\[1\].*same model as models\[0\] \('b'\)/)
    expect(() => fallback({ models: [b, scripted('b', [])] })).toThrow(OptionsError)
    expect(() => fallback({ models: [] })).toThrow(/models/)
    expect(() => fallback({ models: [{ name: 'x' } as never] })).toThrow(/model adapter/)
    const a = scripted('a', [overloaded()])
    const { run, events } = agentOf(a, [fallback({ models: [a] })])
    expect(errorOf(await run())?.kind).toBe('model_failed')
    expect(a.requests).toHaveLength(1)
    expect(events.filter((e) => e.type === 'model.fallback')).toHaveLength(0)

    const proto = scripted('__proto__', [overloaded(), answer('from proto')])
    const layers = [fallback({ models: [proto] }), circuitBreaker({ policy: consecutive({ threshold: 1 }) })]
    const hostile = agentOf(scripted('a', [overloaded()]), layers)
    expect(errorOf(await hostile.run())?.details.models).toMatchObject([{ model: 'a' }, { model: '__proto__', circuit: 'open' }])
    expect(errorOf(await hostile.run())?.details.models).toMatchObject([
      { model: 'a', attempts: 0, error: 'skipped: circuit open (30000 ms left)' },
      { model: '__proto__', attempts: 0, circuit: 'open' },
    ])
    expect(Object.prototype).not.toHaveProperty('circuit')
    expect(({} as Record<string, unknown>).model).toBeUndefined()
  })

  it("names spare models as 'provider:id' resolved by the user's function, once; a missing or failing resolver is an OptionsError", async () => {
    const made: string[] = []
    const resolveModel = (spec: string) => {
      made.push(spec)
      return scripted(spec, [answer(`from ${spec}`)])
    }
    const layer = fallback({ models: ['anthropic:claude-sonnet-4-5'], resolveModel })
    const { run } = agentOf(scripted('a', [overloaded()]), [layer])
    expect(await run()).toMatchObject({ status: 'completed', output: 'from anthropic:claude-sonnet-4-5' })
    await run()
    expect(made).toEqual(['anthropic:claude-sonnet-4-5'])
    expect(() => fallback({ models: ['anthropic:claude'] })).toThrow(/models\[0\].*resolveModel/)
    expect(() => fallback({ models: ['claude'] })).toThrow(/provider:id/)
    expect(() =>
      fallback({
        models: ['x:y'],
        resolveModel: () => {
          throw new Error('no key')
        },
      }),
    ).toThrow(/resolveModel\('x:y'\) threw: no key/)
    expect(() => fallback({ models: ['x:y'], resolveModel: () => ({}) as never })).toThrow(/returned no model adapter/)
  })

  it('the definition builds it from a file (models as provider:id, env.resolveModel) and needs models for model calls', async () => {
    const resolveModel = (spec: string) => scripted(spec, [answer('spare')])
    const layer = fallbackDefinition.buildModel({ models: ['openai:gpt-4o-mini'] }, { resolveModel })
    expect(await agentOf(scripted('a', [overloaded()]), [layer]).run()).toMatchObject({ status: 'completed', output: 'spare' })
    expect(() => fallbackDefinition.buildModel({ default: { from: 'cache' } })).toThrow(/wraps tool calls only/)
    expect(() => fallbackDefinition.buildModel({ models: ['gpt'] })).toThrow(/models/)
    // A tool-call setting on a layer of spare models alone would do nothing: refused, naming it.
    expect(() => fallbackDefinition.buildModel({ models: ['openai:gpt-4o-mini'], cacheMaxAgeMs: 1000 }, { resolveModel })).toThrow(
      /option cacheMaxAgeMs: applies to tool calls only/,
    )
    // With tool sources too, the same options make both sides; spare models alone make no tool side.
    expect(typeof fallbackDefinition.build({ models: ['openai:gpt-4o-mini'], default: { from: 'cache' } }, { resolveModel })).toBe(
      'function',
    )
    expect(() => fallbackDefinition.build({ models: ['openai:gpt-4o-mini'] }, { resolveModel })).toThrow(/wraps model calls only/)
  })
})

describe('fallback() with a run-scoped circuitBreaker()', () => {
  it("keeps the primary's circuit in the run's state: within the run it opens and is skipped; the next run starts closed", async () => {
    const echo = defineTool({ name: 'echo', description: 'Echo', input: z.object({}), effect: 'read', execute: () => 'echoed' })
    const turn = (id: string): ModelResponse => ({ toolCalls: [{ id, name: 'echo', args: {} }] })
    const a = scripted('a', [overloaded()])
    const b = scripted('b', [turn('c1'), turn('c2'), turn('c3'), answer('b done')])
    const agent = createAgent({
      model: a,
      tools: [echo],
      clock: manualClock(),
      modelMiddleware: [fallback({ models: [b] }), circuitBreaker({ policy: consecutive({ threshold: 2 }), lifetime: 'run' })],
    })
    const outcome = await agent.run({ input: 'go' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'b done' })
    // Turns 1 and 2 asked a (and opened its circuit in this run); turns 3 and 4 skipped it.
    expect(a.requests).toHaveLength(2)
    // A new run starts closed: a is asked again until the run's own count opens it.
    b.requests.length = 0
    expect(await agent.run({ input: 'again' })).toMatchObject({ status: 'completed', output: 'b done' })
    expect(a.requests).toHaveLength(4)
  })
})

describe('createAgent({ model: [a, b] })', () => {
  it('is refused, naming the fallback layer as the way', () => {
    const a = scripted('a', [answer('a')])
    const b = scripted('b', [answer('b')])
    expect(() => createAgent({ model: [a, b] as never, tools: [], modelMiddleware: [] })).toThrow(/fallback\(\{ models: \[b\] \}\)/)
  })
})
