// Parking before a model call: a model call that ends on a long wait (a provider's Retry-After past what
// its layers wait out, a rate limit's refusal, an open circuit) checkpoints the run with no turn pending,
// and a resume asks the model again. Virtual time: sleeps return at once and move both clocks.
import {
  type Clock,
  defineTool,
  LoopError,
  type ModelAdapter,
  type ModelMiddleware,
  type ModelRequest,
  type ModelResponse,
  ToolError,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AgentEvent, type CheckpointStore, createAgent, memoryCheckpoints, type RunSnapshot } from './index.js'

const EPOCH = 1_800_000_000_000

function virtualTime(): Clock & { wallNow: () => number; advance(ms: number): void; slept: number[] } {
  let now = 0
  const slept: number[] = []
  return {
    now: () => now,
    wallNow: () => EPOCH + now,
    slept,
    advance(ms) {
      now += ms
    },
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason
      slept.push(ms)
      now += ms
    },
    timer: () => () => {},
  }
}

const pushback = (retryAfterMs: number, init: { category?: 'transient' | 'fatal'; code?: string } = {}) =>
  new ToolError(init.code ?? 'rate_limited', 'rate limited by the provider', {
    category: init.category ?? 'transient',
    retryable: true,
    safeToRepeat: true,
    retryAfterMs,
    details: { status: 429 },
  })

type Step = ModelResponse | Error | ((request: ModelRequest) => ModelResponse)

/** A model named `gpt` that answers `steps` in order (an Error is thrown), the last one from then on. */
function model(steps: Step[]): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    name: 'gpt',
    requests,
    async generate(request) {
      // A copy: the agent's transcript grows after the call.
      requests.push({ ...request, messages: [...request.messages] })
      const step = steps[Math.min(requests.length - 1, steps.length - 1)] as Step
      if (step instanceof Error) throw step
      return typeof step === 'function' ? step(request) : step
    },
  }
}

function world() {
  const effects = { charges: 0 }
  const charge = defineTool({
    name: 'charge',
    description: 'Charge a card',
    input: z.object({ cents: z.number() }),
    effect: 'write',
    execute: ({ cents }) => {
      effects.charges++
      return `charged ${cents}`
    },
  })
  return { effects, tools: [charge] }
}

const chargeCall = { toolCalls: [{ id: 'c1', name: 'charge', args: { cents: 500 } }] }
const lastResult = (request: ModelRequest): ModelResponse => ({
  text: `done: ${(request.messages.filter((m) => m.role === 'tool').at(-1) as { content: string } | undefined)?.content ?? 'nothing'}`,
})

function setup(steps: Step[], options: { checkpoints?: CheckpointStore; maxWaitMs?: number; modelMiddleware?: ModelMiddleware[] } = {}) {
  const time = virtualTime()
  const w = world()
  const checkpoints = options.checkpoints ?? memoryCheckpoints()
  const m = model(steps)
  const events: AgentEvent[] = []
  const park = { afterMs: 10_000, wallNow: time.wallNow, ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }) }
  const agent = createAgent({
    model: m,
    tools: w.tools,
    checkpoints,
    clock: time,
    park,
    onEvent: (e) => events.push(e),
    ...(options.modelMiddleware === undefined ? {} : { modelMiddleware: options.modelMiddleware }),
  })
  return { time, ...w, checkpoints, m, agent, events }
}

describe('parking before a model call', () => {
  it('parks a run whose first model call is pushed back past afterMs, with no turn pending, and asks the model again on wake', async () => {
    const { time, checkpoints, m, agent, events } = setup([pushback(120_000), { text: 'hello' }])
    const parked = await agent.run({ input: 'say hello', runId: 'r1' })
    expect(parked).toMatchObject({
      status: 'parked',
      runId: 'r1',
      wakeAt: EPOCH + 120_000,
      reason: { code: 'rate_limited', model: 'gpt', waitMs: 120_000 },
      turns: 0,
    })
    expect(parked.status === 'parked' && 'tool' in parked.reason).toBe(false)
    expect(time.slept).toEqual([])
    const saved = (await checkpoints.load('r1')) as RunSnapshot
    expect(saved).toMatchObject({ status: 'parked', turn: 0, parked: { wakeAt: EPOCH + 120_000, parkedAt: EPOCH } })
    expect(saved.pendingTurn).toBeUndefined()
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'parked', turns: 0 })

    // Too early: the same outcome, nothing asked.
    time.advance(60_000)
    expect(await agent.resume('r1')).toMatchObject({ status: 'parked', wakeAt: EPOCH + 120_000 })
    expect(m.requests).toHaveLength(1)

    time.advance(60_000)
    expect(await agent.resume('r1')).toMatchObject({ status: 'completed', output: 'hello', turns: 1 })
    expect(m.requests).toHaveLength(2)
    // The model reads the task as it was: the failed call left nothing in the transcript.
    expect(m.requests[1]?.messages).toEqual([{ role: 'user', content: 'say hello' }])
    expect(await checkpoints.load('r1')).toMatchObject({ status: 'completed', turn: 1 })
  })

  it('parks between turns: the completed turn is kept, its write never runs again, and the next turn asks the model on wake', async () => {
    const { time, effects, m, agent } = setup([chargeCall, pushback(60_000), lastResult])
    expect(await agent.run({ input: 'charge it', runId: 'r2' })).toMatchObject({
      status: 'parked',
      wakeAt: EPOCH + 60_000,
      reason: { model: 'gpt', waitMs: 60_000 },
      turns: 1,
    })
    time.advance(60_000)
    const done = await agent.resume('r2')
    expect(done).toMatchObject({ status: 'completed', output: 'done: charged 500', turns: 2 })
    expect(effects.charges).toBe(1)
    expect(m.requests).toHaveLength(3)
  })

  it('waits out a short rest in the worker when resumed a little early, then asks the model', async () => {
    const { time, m, agent } = setup([pushback(60_000), { text: 'ok' }])
    await agent.run({ input: 'x', runId: 'r3' })
    time.advance(55_000)
    expect(await agent.resume('r3')).toMatchObject({ status: 'completed', output: 'ok' })
    expect(time.slept).toEqual([5000])
    expect(m.requests).toHaveLength(2)
  })

  it('parks on a model layer’s refusal too (a rate limit, an open circuit), as it left the failure', async () => {
    let refusals = 1
    const limited: ModelMiddleware = async (_ctx, next) => {
      if (refusals-- > 0) throw new ToolError('circuit_open', 'the model is resting', { category: 'transient', retryAfterMs: 30_000 })
      await next()
    }
    const { time, m, agent } = setup([{ text: 'ok' }], { modelMiddleware: [limited] })
    expect(await agent.run({ input: 'x', runId: 'r4' })).toMatchObject({ status: 'parked', reason: { code: 'circuit_open', model: 'gpt' } })
    expect(m.requests).toHaveLength(0)
    time.advance(30_000)
    expect(await agent.resume('r4')).toMatchObject({ status: 'completed', output: 'ok' })
  })

  it.each([
    ['a wait shorter than afterMs', pushback(9_999)],
    ['a wait longer than maxWaitMs', pushback(3_600_001)],
    ['a failure that will not heal', pushback(60_000, { category: 'fatal', code: 'permission_denied' })],
    ['a retryAfterMs that is NaN', pushback(Number.NaN)],
    ['a retryAfterMs that is Infinity', pushback(Number.POSITIVE_INFINITY)],
    ['a negative retryAfterMs', pushback(-60_000)],
    ['a failure without a wait', new ToolError('upstream_error', 'the provider failed', { category: 'transient' })],
    ['a failure that is no ToolError', Object.assign(new Error('429 Too Many Requests'), { status: 429, retryAfterMs: 60_000 })],
  ])('does not park on %s: the run stops as model_failed, as before', async (_, failure) => {
    const { checkpoints, agent } = setup([failure, { text: 'never' }], { maxWaitMs: 3_600_000 })
    const outcome = await agent.run({ input: 'x', runId: 'r5' })
    expect(outcome.status).toBe('stopped')
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('model_failed')
    expect(await checkpoints.load('r5')).toMatchObject({ status: 'stopped' })
  })

  it('does not park without park: the agent stops as it always has', async () => {
    const w = world()
    const agent = createAgent({ model: model([pushback(120_000)]), tools: w.tools, checkpoints: memoryCheckpoints() })
    const outcome = await agent.run({ input: 'x' })
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('model_failed')
  })

  it('does not take a tool’s model_failed (a nested agent’s) for its own model call: the turn was in flight', async () => {
    const nested = defineTool({
      name: 'ask_expert',
      description: 'Asks another agent',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw new LoopError('model_failed', 'the expert’s model failed', { cause: pushback(60_000), details: { model: 'expert' } })
      },
    })
    const time = virtualTime()
    const agent = createAgent({
      model: model([{ toolCalls: [{ id: 'e1', name: 'ask_expert', args: {} }] }, { text: 'x' }]),
      tools: [nested],
      checkpoints: memoryCheckpoints(),
      clock: time,
      park: { afterMs: 10_000, wallNow: time.wallNow },
    })
    const outcome = await agent.run({ input: 'x' })
    expect(outcome.status).toBe('stopped')
  })

  it('rejects with the store’s failure, leaving the last good checkpoint, when the parked checkpoint cannot be saved', async () => {
    const inner = memoryCheckpoints()
    const store: CheckpointStore = {
      name: 'runs-db',
      save: (s) => (s.status === 'parked' ? Promise.reject(new Error('connection reset')) : inner.save(s)),
      load: (id) => inner.load(id),
    }
    const { agent } = setup([chargeCall, pushback(60_000)], { checkpoints: store })
    await expect(agent.run({ input: 'x', runId: 'r6' })).rejects.toThrow(
      'checkpoints store "runs-db" failed to save the parked checkpoint of run "r6": connection reset',
    )
    expect(await inner.load('r6')).toMatchObject({ status: 'running', turn: 1 })
  })

  it('refuses a checkpoint parked before its model call that holds a pending turn, or a reason naming neither a tool nor a model', async () => {
    const { time, checkpoints, agent, effects } = setup([pushback(60_000)])
    await agent.run({ input: 'x', runId: 'r7' })
    const saved = (await checkpoints.load('r7')) as RunSnapshot
    const pendingTurn = { turn: 1, response: chargeCall, results: {}, pending: [] }
    await checkpoints.save({ ...saved, pendingTurn })
    time.advance(60_000)
    await expect(agent.resume('r7')).rejects.toThrow(/corrupt park record \(a run parked before its model call holds a pending turn\)/)
    const parked = saved.parked as NonNullable<RunSnapshot['parked']>
    await checkpoints.save({ ...saved, parked: { ...parked, reason: { code: 'rate_limited', waitMs: 1 } as never } })
    await expect(agent.resume('r7')).rejects.toThrow(/reason is neither \{ code, tool, callId, waitMs \} nor \{ code, model, waitMs \}/)
    await checkpoints.save({ ...saved, parked: { ...parked, reason: { code: 'rate_limited', model: 7, waitMs: 1 } as never } })
    await expect(agent.resume('r7')).rejects.toThrow(/corrupt park record/)
    expect(effects.charges).toBe(0)
  })
})
