import {
  type Clock,
  defineTool,
  LoopError,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type CheckpointStore, createAgent, memoryCheckpoints, ParkedError, type RunSnapshot } from './index.js'

const EPOCH = 1_800_000_000_000

/**
 * Virtual time: a sleep returns at once and moves both clocks by its length; `advance` moves them by
 * hand; deadlines (`timer`) never fire, so a model call is never timed out by a sleep elsewhere.
 */
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

type Step = ModelResponse | ((request: ModelRequest) => ModelResponse)

function model(steps: Step[]): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    requests,
    async generate(request) {
      requests.push(request)
      const step = steps[Math.min(requests.length - 1, steps.length - 1)] as Step
      return typeof step === 'function' ? step(request) : step
    },
  }
}

const rateLimited = (retryAfterMs: number) =>
  new ToolError('rate_limited', 'the search API is rate limiting: slow down', {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    retryAfterMs,
  })

/** A world: `charge` is a write that counts its executions; `search` answers `waits` in order, then a result. */
function world(waits: Array<ToolError | undefined> = []) {
  const effects = { charges: 0, searches: 0 }
  let gate: Promise<void> | undefined
  const charge = defineTool({
    name: 'charge',
    description: 'Charge a card',
    input: z.object({ cents: z.number() }),
    effect: 'write',
    execute: async ({ cents }) => {
      await gate
      effects.charges++
      return `charged ${cents}`
    },
  })
  const search = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => {
      const failure = waits[effects.searches++]
      if (failure !== undefined) throw failure
      return `found ${q}`
    },
  })
  return {
    effects,
    tools: [charge, search],
    hold(until: Promise<void>) {
      gate = until
    },
  }
}

const both = {
  toolCalls: [
    { id: 'c1', name: 'charge', args: { cents: 500 } },
    { id: 's1', name: 'search', args: { q: 'flights' } },
  ],
}
const answerFromResults = (request: ModelRequest): ModelResponse => ({
  text: request.messages
    .filter((m) => m.role === 'tool')
    .map((m) => (m as { content: string }).content)
    .join(' | '),
})

describe('createAgent({ park }) options', () => {
  it('refuses park without a checkpoints store: a parked run could never wake', () => {
    const { tools } = world()
    expect(() => createAgent({ model: model([{ text: 'x' }]), tools, park: { afterMs: 5000 } })).toThrow(OptionsError)
    expect(() => createAgent({ model: model([{ text: 'x' }]), tools, park: { afterMs: 5000 } })).toThrow(
      /option park: needs a checkpoints store to park runs in; pass createAgent\(\{ checkpoints, park \}\)/,
    )
  })

  it.each([
    [{ afterMs: Number.NaN }, /option park.afterMs/],
    [{ afterMs: Number.POSITIVE_INFINITY }, /option park.afterMs/],
    [{ afterMs: -1 }, /option park.afterMs: must be a number of ms > 0/],
    [{ afterMs: 10_000, maxWaitMs: 5000 }, /option park.afterMs: afterMs must not exceed maxWaitMs/],
    [{ afterMs: 5000, wallNow: 'now' }, /option park.wallNow: must be a function/],
    [{ afterMs: 5000, sleepMs: 1 }, /park/],
  ])('refuses park %j with an error naming the option', (park, message) => {
    const { tools } = world()
    expect(() => createAgent({ model: model([{ text: 'x' }]), tools, checkpoints: memoryCheckpoints(), park: park as never })).toThrow(
      message,
    )
  })

  it('refuses a checkpoints option that is not a store', () => {
    const { tools } = world()
    expect(() => createAgent({ model: model([{ text: 'x' }]), tools, checkpoints: { save() {} } as never })).toThrow(
      /option checkpoints: must be a checkpoint store \{ save\(snapshot\), load\(runId\) \}/,
    )
  })
})

describe('a checkpoint that cannot be saved', () => {
  const failing = (failFrom: number): CheckpointStore & { saves: number } => {
    const store = {
      name: 'orders-db',
      saves: 0,
      save() {
        if (store.saves++ >= failFrom) throw new Error('connection refused')
      },
      load: () => undefined,
    }
    return store
  }

  it('makes run() reject before anything runs when the first checkpoint fails, naming the store and the run', async () => {
    const { tools, effects } = world()
    const m = model([both, { text: 'done' }])
    const run = createAgent({ model: m, tools, checkpoints: failing(0) }).run({ input: 'book', runId: 'r1' })
    await expect(run).rejects.toSatisfy(LoopError.is)
    await expect(run).rejects.toThrow('checkpoints store "orders-db" failed to save the first checkpoint of run "r1": connection refused')
    expect(m.requests).toHaveLength(0)
    expect(effects.charges).toBe(0)
  })

  it('names a store without a name as "the checkpoints store"', async () => {
    const { tools } = world()
    const store = { save: () => Promise.reject(new Error('disk full')), load: () => undefined }
    await expect(
      createAgent({ model: model([{ text: 'x' }]), tools, checkpoints: store }).run({ input: 'x', runId: 'r2' }),
    ).rejects.toThrow('the checkpoints store failed to save the first checkpoint of run "r2": disk full')
  })

  it('makes run() reject as fatal, naming the store, when a turn cannot be checkpointed: the store failed, not the run', async () => {
    const { tools, effects } = world()
    const run = createAgent({ model: model([both, { text: 'done' }]), tools, checkpoints: failing(1) }).run({ input: 'book', runId: 'r3' })
    await expect(run).rejects.toMatchObject({
      kind: 'fatal',
      message: 'checkpoints store "orders-db" failed to save the checkpoint of turn 1 of run "r3": connection refused',
    })
    expect(effects.charges).toBe(1)
  })
})

describe('parking a run', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  const setup = (waits: Array<ToolError | undefined>, steps: Step[] = [both, answerFromResults]) => {
    const time = virtualTime()
    const w = world(waits)
    const checkpoints = memoryCheckpoints()
    const m = model(steps)
    const agent = createAgent({ model: m, tools: w.tools, checkpoints, clock: time, park: { afterMs: 10_000, wallNow: time.wallNow } })
    return { time, ...w, checkpoints, m, agent }
  }

  it('parks a turn whose call must wait past afterMs, then resumes only the waiting call', async () => {
    const { time, effects, checkpoints, m, agent } = setup([rateLimited(60_000)])
    const parked = await agent.run({ input: 'book a trip', runId: 'trip' })
    expect(parked).toMatchObject({
      status: 'parked',
      runId: 'trip',
      wakeAt: EPOCH + 60_000,
      reason: { code: 'rate_limited', tool: 'search', callId: 's1', waitMs: 60_000 },
      turns: 0,
    })
    expect(time.slept).toEqual([])
    expect(await checkpoints.load('trip')).toMatchObject({
      status: 'parked',
      turn: 0,
      parked: { wakeAt: EPOCH + 60_000, parkedAt: EPOCH },
      pendingTurn: { turn: 1, results: { c1: { ok: true, content: 'charged 500' } } },
    })
    expect(effects).toEqual({ charges: 1, searches: 1 })

    time.advance(60_000)
    const done = await agent.resume('trip')
    expect(done).toMatchObject({ status: 'completed', output: 'charged 500 | found flights', turns: 2 })
    expect(effects).toEqual({ charges: 1, searches: 2 })
    // One model call for the parked turn, one after it: the parked turn's reply was not asked for again.
    expect(m.requests).toHaveLength(2)
    expect(await checkpoints.load('trip')).toMatchObject({ status: 'completed' })
  })

  it('answers a resume long before wakeAt with the same parked outcome, running nothing', async () => {
    const { time, effects, m, agent } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'early' })
    time.advance(30_000)
    expect(await agent.resume('early')).toMatchObject({ status: 'parked', wakeAt: EPOCH + 60_000, reason: { waitMs: 60_000 } })
    expect(effects).toEqual({ charges: 1, searches: 1 })
    expect(m.requests).toHaveLength(1)
    expect(time.slept).toEqual([])
  })

  it('waits out a rest shorter than afterMs when resumed a little early, then continues', async () => {
    const { time, effects, agent } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'nearly' })
    time.advance(55_000)
    expect(await agent.resume('nearly')).toMatchObject({ status: 'completed' })
    expect(time.slept).toEqual([5000])
    expect(effects).toEqual({ charges: 1, searches: 2 })
  })

  it('answers parked, running nothing, when the caller cancels while a short rest is waited out', async () => {
    const { time, effects, checkpoints, agent, tools } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'cancel' })
    time.advance(55_000)
    // A clock whose sleep only ends by its signal: the cancellation lands mid-rest.
    const sleeping: Clock = {
      now: time.now,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          if (signal?.aborted) reject(signal.reason)
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
      timer: () => () => {},
    }
    const park = { afterMs: 10_000, wallNow: time.wallNow }
    const later = createAgent({ model: model([answerFromResults]), tools, checkpoints, clock: sleeping, park })
    const controller = new AbortController()
    const resumed = later.resume('cancel', { signal: controller.signal })
    controller.abort(new Error('shutting down'))
    expect(await resumed).toMatchObject({ status: 'parked', wakeAt: EPOCH + 60_000 })
    expect(await checkpoints.load('cancel')).toMatchObject({ status: 'parked' })
    expect(effects).toEqual({ charges: 1, searches: 1 })
  })

  it('resumes late just the same', async () => {
    const { time, agent } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'late' })
    time.advance(3_600_000)
    expect(await agent.resume('late')).toMatchObject({ status: 'completed', output: 'charged 500 | found flights' })
  })

  it('parks again when the call still has to wait on wake, and keeps the write done', async () => {
    const { time, effects, agent } = setup([rateLimited(60_000), rateLimited(20_000)])
    await agent.run({ input: 'book', runId: 'twice' })
    time.advance(60_000)
    expect(await agent.resume('twice')).toMatchObject({ status: 'parked', wakeAt: EPOCH + 80_000 })
    time.advance(20_000)
    expect(await agent.resume('twice')).toMatchObject({ status: 'completed', output: 'charged 500 | found flights' })
    expect(effects).toEqual({ charges: 1, searches: 3 })
  })

  it('parks for the longest wait of the turn', async () => {
    const time = virtualTime()
    const { tools } = world([rateLimited(15_000), rateLimited(40_000)])
    const two = {
      toolCalls: [
        { id: 'a', name: 'search', args: { q: 'a' } },
        { id: 'b', name: 'search', args: { q: 'b' } },
      ],
    }
    const agent = createAgent({
      model: model([two, answerFromResults]),
      tools,
      checkpoints: memoryCheckpoints(),
      clock: time,
      park: { afterMs: 10_000, wallNow: time.wallNow },
      limits: { maxParallelToolCalls: 1 },
    })
    expect(await agent.run({ input: 'x', runId: 'r' })).toMatchObject({ status: 'parked', wakeAt: EPOCH + 40_000, reason: { callId: 'b' } })
  })

  it('does not park for a wait shorter than afterMs, longer than maxWaitMs, or on a write that may have reached the world', async () => {
    const time = virtualTime()
    const unsure = new ToolError('upstream_error', 'the payment API answered 503', { category: 'transient', retryAfterMs: 60_000 })
    const effects = { pays: 0 }
    const pay = defineTool({
      name: 'pay',
      description: 'Pay',
      input: z.object({}),
      effect: 'write',
      execute: () => {
        effects.pays++
        throw unsure
      },
    })
    const { tools } = world([rateLimited(9_999), rateLimited(7_200_000)])
    const calls = {
      toolCalls: [
        { id: 's1', name: 'search', args: { q: 'a' } },
        { id: 's2', name: 'search', args: { q: 'b' } },
        { id: 'p1', name: 'pay', args: {} },
      ],
    }
    const agent = createAgent({
      model: model([calls, { text: 'done' }]),
      tools: [...tools, pay],
      checkpoints: memoryCheckpoints(),
      clock: time,
      park: { afterMs: 10_000, maxWaitMs: 3_600_000, wallNow: time.wallNow },
      limits: { maxParallelToolCalls: 1 },
    })
    const outcome = await agent.run({ input: 'x' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'done' })
    expect(effects.pays).toBe(1)
  })

  it('keeps the result of a write that may have reached the world when a sibling parks: it is not made again on wake', async () => {
    const time = virtualTime()
    const unsure = new ToolError('upstream_error', 'the payment API answered 503', { category: 'transient', retryAfterMs: 60_000 })
    const effects = { pays: 0 }
    const pay = defineTool({
      name: 'pay',
      description: 'Pay',
      input: z.object({}),
      effect: 'write',
      execute: () => {
        effects.pays++
        throw unsure
      },
    })
    const w = world([rateLimited(60_000)])
    const calls = {
      toolCalls: [
        { id: 'p1', name: 'pay', args: {} },
        { id: 's1', name: 'search', args: { q: 'a' } },
      ],
    }
    const agent = createAgent({
      model: model([calls, answerFromResults]),
      tools: [...w.tools, pay],
      checkpoints: memoryCheckpoints(),
      clock: time,
      park: { afterMs: 10_000, wallNow: time.wallNow },
    })
    expect(await agent.run({ input: 'x', runId: 'unsure' })).toMatchObject({ status: 'parked', reason: { callId: 's1' } })
    time.advance(60_000)
    const done = await agent.resume('unsure')
    expect(done).toMatchObject({ status: 'completed' })
    expect(effects.pays).toBe(1)
    expect(w.effects.searches).toBe(2)
  })

  it('never parks while a write is in flight: the turn settles first and the write is kept', async () => {
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    // The charge holds until released; the search fails at once with a long wait.
    const { time, effects, checkpoints, agent, hold } = setup([rateLimited(60_000)])
    hold(gate)
    let settled = false
    const running = agent.run({ input: 'book', runId: 'slow' }).then((outcome) => {
      settled = true
      return outcome
    })
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    expect(effects).toEqual({ charges: 0, searches: 1 })
    expect((await checkpoints.load('slow'))?.status).toBe('running')
    release()
    expect(await running).toMatchObject({ status: 'parked' })
    expect(effects).toEqual({ charges: 1, searches: 1 })
    time.advance(60_000)
    expect(await agent.resume('slow')).toMatchObject({ status: 'completed', output: 'charged 500 | found flights' })
    expect(effects).toEqual({ charges: 1, searches: 2 })
  })

  it('on an agent without park: an early resume rejects with a ParkedError naming wakeAt, a due one continues', async () => {
    const { time, effects, checkpoints, agent, tools } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'plain' })
    // An agent without park reads the wall clock from Date.
    vi.useFakeTimers({ toFake: ['Date'], now: EPOCH })
    const plain = createAgent({ model: model([answerFromResults]), tools, checkpoints, clock: time })
    const early = plain.resume('plain')
    await expect(early).rejects.toSatisfy(ParkedError.is)
    await expect(early).rejects.toMatchObject({ runId: 'plain', wakeAt: EPOCH + 60_000, code: 'run_parked' })
    await expect(early).rejects.toThrow(
      `agent.resume(): run "plain" is parked until ${new Date(EPOCH + 60_000).toISOString()} (60000 ms from now)`,
    )
    expect(effects).toEqual({ charges: 1, searches: 1 })
    vi.setSystemTime(EPOCH + 60_000)
    expect(await plain.resume('plain')).toMatchObject({ status: 'completed', output: 'charged 500 | found flights' })
    expect(effects).toEqual({ charges: 1, searches: 2 })
  })

  it('refuses a second resume of a run being resumed: the waiting call runs once, the model is asked once', async () => {
    const { time, effects, m, agent } = setup([rateLimited(60_000)])
    await agent.run({ input: 'book', runId: 'dup' })
    time.advance(60_000)
    const first = agent.resume('dup')
    await expect(agent.resume('dup')).rejects.toMatchObject({ name: 'ResumeError', code: 'run_in_progress' })
    expect(await first).toMatchObject({ status: 'completed' })
    expect(effects).toEqual({ charges: 1, searches: 2 })
    expect(m.requests).toHaveLength(2)
  })
})

describe('a parked checkpoint that is corrupt', () => {
  const parkedRow = async (parked: unknown, extra: Partial<RunSnapshot> = {}) => {
    const time = virtualTime()
    const { tools, effects } = world()
    const checkpoints = memoryCheckpoints()
    const m = model([{ text: 'x' }])
    const agent = createAgent({ model: m, tools, checkpoints, clock: time, park: { afterMs: 10_000, wallNow: time.wallNow } })
    await checkpoints.save({
      version: 1,
      runId: 'bad',
      input: 'x',
      status: 'parked',
      turn: 0,
      stepsUsed: 1,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
      pendingTurn: { turn: 1, response: both, results: {}, pending: [] },
      parked: parked as never,
      ...extra,
    })
    return { agent, effects, m }
  }
  const reason = { code: 'rate_limited', tool: 'search', callId: 's1', waitMs: 60_000 }

  it.each([
    ['wakeAt NaN (null once in JSON)', { wakeAt: Number.NaN, parkedAt: EPOCH, reason }, /wakeAt is null, not a wall-clock time in ms/],
    ['wakeAt a string', { wakeAt: '2027-01-01', parkedAt: EPOCH, reason }, /wakeAt is "2027-01-01", not a wall-clock time/],
    ['wakeAt missing', { parkedAt: EPOCH, reason }, /wakeAt is undefined/],
    ['wakeAt before it parked', { wakeAt: EPOCH - 1, parkedAt: EPOCH, reason }, /is before it parked/],
    [
      'wakeAt far in the future',
      { wakeAt: EPOCH + 400 * 86_400_000, parkedAt: EPOCH, reason },
      /further ahead than park.maxWaitMs \(86400000 ms\)/,
    ],
    [
      'parkedAt far in the future',
      { wakeAt: EPOCH + 90 * 86_400_000, parkedAt: EPOCH + 89 * 86_400_000, reason },
      /further ahead than park.maxWaitMs/,
    ],
    ['no reason', { wakeAt: EPOCH, parkedAt: EPOCH }, /reason is neither \{ code, tool, callId, waitMs \} nor \{ code, model, waitMs \}/],
    ['no record', null, /no park record/],
  ])('refuses to resume a parked run with %s, naming the run, and runs nothing', async (_name, parked, message) => {
    const { agent, effects, m } = await parkedRow(JSON.parse(JSON.stringify(parked)))
    const resumed = agent.resume('bad')
    await expect(resumed).rejects.toThrow(TypeError)
    await expect(resumed).rejects.toThrow(message)
    await expect(resumed).rejects.toThrow(/the checkpoint of run "bad" is parked with a corrupt park record/)
    expect(effects).toEqual({ charges: 0, searches: 0 })
    expect(m.requests).toHaveLength(0)
  })

  it('refuses a parked run whose waiting turn is missing', async () => {
    const { agent } = await parkedRow({ wakeAt: EPOCH, parkedAt: EPOCH, reason }, { pendingTurn: undefined as never })
    await expect(agent.resume('bad')).rejects.toThrow(/the waiting turn \(pendingTurn\) is missing/)
  })
})
