import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runBench, scheduleOf } from './bench.js'
import { looksFailed } from './brain.js'
import { CONTENDERS } from './contenders/index.js'
import { reconcilerOf, searchReconcilerOf } from './contenders/shallot-agent.js'
import { startEndpoint } from './endpoint.js'
import { runEpisode } from './episode.js'
import { ALL_FAULTS, hashSeed, MODEL_OUTAGES, mixedSchedule, singleFaultSchedule } from './faults.js'
import { type BenchTool, TASKS } from './tasks.js'
import { clock, drive, installVirtualTime, uninstallVirtualTime } from './virtual-time.js'
import { World } from './world.js'

describe('the agent bench, one seed', () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())

  it('runs every contender on every task under the mixed schedule and the matrix, and each succeeds somewhere', async () => {
    // The one-request faults: the outage rows (minutes of virtual time each) have tests of their own below.
    const faults = ALL_FAULTS.filter((kind) => !MODEL_OUTAGES.includes(kind) && kind !== 'write_timeout_after_effect_x2')
    const result = await runBench({ seed: 1, episodes: 1, matrixEpisodes: 1, faults })
    expect(result.mixed.map((s) => s.contender)).toEqual(CONTENDERS.map((c) => c.id))
    for (const contender of CONTENDERS) {
      const runs = result.runs.filter((r) => r.contender === contender.id)
      expect(new Set(runs.map((r) => r.task))).toEqual(new Set(TASKS.map((t) => t.id)))
      // Without a fault, every contender finishes the task: the harness, not the faults, would be broken otherwise.
      const calm = runs.filter((r) => r.schedule === 'mixed')
      expect(
        calm.some((r) => r.status === 'success'),
        `${contender.id} never succeeded`,
      ).toBe(true)
    }
    expect(Object.keys(result.matrix).length).toBeGreaterThan(5)
  }, 110_000)
})

describe('the brain reads a result the way a model would', () => {
  it.each([
    ['{"error":"timeout","message":"took too long"}', true],
    ['An error occurred while running the tool. Please try again.', true],
    ['https://x.example answered 503 Service Unavailable', true],
    ['fetch failed', true],
    ['{"refund":"re_Q0042","status":"succeeded"}', false],
    ['{"fallback":"from \'get_forecast_mirror\'","value":{"city":"Lyon"}}', false],
  ])('%s → failed: %s', (result, failed) => {
    expect(looksFailed({ id: 'c1', name: 't', result })).toBe(failed)
  })
})

describe('the fault schedule', () => {
  it('is the same for the same seed and differs across seeds', () => {
    const targets = TASKS[0]?.faultTargets ?? { reads: [], writes: [], mirrored: [] }
    expect(mixedSchedule(hashSeed(1, 'a'), targets)).toEqual(mixedSchedule(hashSeed(1, 'a'), targets))
    const many = Array.from({ length: 20 }, (_, i) => JSON.stringify(mixedSchedule(hashSeed(i), targets)))
    expect(new Set(many).size).toBeGreaterThan(1)
  })

  it('puts a write-only fault on a write and skips a task without a mirror for dead_upstream', () => {
    const refund = TASKS.find((t) => t.id === 'refund')?.faultTargets ?? { reads: [], writes: [], mirrored: [] }
    expect(singleFaultSchedule('write_timeout_after_effect', 1, refund)?.tools).toEqual({ refund_payment: ['write_timeout_after_effect'] })
    expect(singleFaultSchedule('dead_upstream', 1, refund)).toBeUndefined()
  })
})

describe("the used-fully row's reconcile", () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())

  it("asks the service's lookup: not applied before the write landed, applied with its answer after; a request, never an effect", async () => {
    const refund = TASKS.find((t) => t.id === 'refund') as (typeof TASKS)[number]
    const world = new World({ tools: {}, model: [], dead: [] }, () => clock.now)
    const tool = refund.tools(world).find((t) => t.name === 'refund_payment') as BenchTool
    const { reconcile } = reconcilerOf(tool)
    if (reconcile === undefined) throw new Error('refund_payment has no reconcile')
    const signal = new AbortController().signal
    const ask = () =>
      drive(
        () => reconcile({}, { idempotencyKey: 'k-1', signal }),
        60_000,
        () => {},
      )
    expect((await ask()).value).toEqual({ status: 'not_applied' })
    await drive(
      () => tool.execute({ payment: 'pi_3Q0042', amountCents: 4200 }, { signal, idempotencyKey: 'k-1' }),
      60_000,
      () => {},
    )
    expect((await ask()).value).toEqual({ status: 'applied', result: { refund: 're_3Q0042', amountCents: 4200, status: 'succeeded' } })
    expect(world.ledger).toHaveLength(1)
    expect(world.executions).toBe(3)
  })

  it('rejects with the reason when the signal aborts mid-lookup, and lands no effect', async () => {
    const refund = TASKS.find((t) => t.id === 'refund') as (typeof TASKS)[number]
    const world = new World({ tools: {}, model: [], dead: [] }, () => clock.now)
    const tool = refund.tools(world).find((t) => t.name === 'refund_payment') as BenchTool
    const { reconcile } = reconcilerOf(tool)
    const controller = new AbortController()
    const asked = reconcile?.({}, { idempotencyKey: 'k-1', signal: controller.signal })
    controller.abort(new Error('the call lost'))
    await expect(asked).rejects.toThrow('the call lost')
    expect(world.ledger).toHaveLength(0)
  })

  it('is absent for a read tool', () => {
    const world = new World({ tools: {}, model: [], dead: [] }, () => clock.now)
    const read = TASKS[0]?.tools(world).find((t) => t.effect === 'read') as BenchTool
    expect(reconcilerOf(read)).toEqual({})
  })
})

describe("the +reconcile row's reconcile: no key upstream, so it searches by what the write carried", () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())
  const refundArgs = { payment: 'pi_3Q0042', amountCents: 4200 }
  const settle = <T>(run: () => Promise<T>) => drive(run, 60_000, () => {})

  function setup(schedule: ReadonlyArray<'write_timeout_after_effect' | 'write_refused' | undefined> = []) {
    const refund = TASKS.find((t) => t.id === 'refund') as (typeof TASKS)[number]
    const world = new World({ tools: { refund_payment: [...schedule] }, model: [], dead: [] }, () => clock.now)
    const tool = refund.tools(world).find((t) => t.name === 'refund_payment') as BenchTool
    const { send, reconcilers } = searchReconcilerOf(tool)
    const reconcile = reconcilers.reconcile as NonNullable<typeof reconcilers.reconcile>
    return { world, send, reconcile, signal: new AbortController().signal }
  }

  it('finds a write that landed and then timed out: applied, with the write’s own answer, and no new effect', async () => {
    const { world, send, reconcile, signal } = setup(['write_timeout_after_effect'])
    expect((await settle(() => send(refundArgs, { signal }))).error).toBeDefined()
    const answer = await settle(() => reconcile({ ...refundArgs }, { signal }))
    expect(answer.value).toEqual({ status: 'applied', result: { refund: 're_3Q0042', amountCents: 4200, status: 'succeeded' } })
    expect(world.ledger).toHaveLength(1)
  })

  it('answers not_applied for a write refused before anything happened, and for other arguments', async () => {
    const { world, send, reconcile, signal } = setup(['write_refused'])
    expect((await settle(() => send(refundArgs, { signal }))).error).toBeDefined()
    expect((await settle(() => reconcile(refundArgs, { signal }))).value).toEqual({ status: 'not_applied' })
    await settle(() => send({ ...refundArgs, amountCents: 100 }, { signal }))
    expect(world.ledger).toHaveLength(1)
    expect((await settle(() => reconcile(refundArgs, { signal }))).value).toEqual({ status: 'not_applied' })
  })

  it('does not count an earlier write of the same arguments: only one created since the last send', async () => {
    const { world, send, reconcile, signal } = setup([undefined, 'write_refused'])
    await settle(() => send(refundArgs, { signal }))
    await settle(() => new Promise((resolve) => setTimeout(resolve, 5_000)))
    expect((await settle(() => send(refundArgs, { signal }))).error).toBeDefined()
    expect((await settle(() => reconcile(refundArgs, { signal }))).value).toEqual({ status: 'not_applied' })
    expect(world.ledger).toHaveLength(1)
  })

  it('answers unknown for arguments never sent from here, without a request', async () => {
    const { world, reconcile, signal } = setup()
    expect((await settle(() => reconcile({ ['__proto__']: { payment: 'x' }, ...refundArgs }, { signal }))).value).toMatchObject({
      status: 'unknown',
    })
    expect(world.executions).toBe(0)
  })

  it('rejects with the reason when the signal aborts mid-search', async () => {
    const { send, reconcile, signal } = setup(['write_refused'])
    await settle(() => send(refundArgs, { signal }))
    const controller = new AbortController()
    const asked = reconcile(refundArgs, { signal: controller.signal })
    controller.abort(new Error('the call lost'))
    await expect(asked).rejects.toThrow('the call lost')
  })
})

describe("issue 34's bar, one episode each, as the bench runs it", () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())

  async function episode(contenderId: string, taskId: string, kind: Parameters<typeof scheduleOf>[0]) {
    const contender = CONTENDERS.find((c) => c.id === contenderId)
    const task = TASKS.find((t) => t.id === taskId)
    const schedule = task && scheduleOf(kind, 1, task, 0)
    if (contender === undefined || task === undefined || schedule === undefined) throw new Error(`no ${contenderId} ${taskId} ${kind}`)
    const endpoint = await startEndpoint()
    try {
      return await runEpisode(endpoint, contender, task, schedule)
    } finally {
      await endpoint.close()
    }
  }

  it.each(['write_timeout_after_effect', 'write_reset_after_effect'] as const)(
    'shallot+reconcile completes a refund that landed and then failed (%s) once, with no key sent upstream',
    async (kind) => {
      const result = await episode('shallot+reconcile', 'refund', kind)
      expect(result).toMatchObject({ status: 'success', duplicates: 0, effects: 1 })
      expect(result.trace.some((line) => line.text.includes('key='))).toBe(false)
      expect(result.trace.some((line) => line.text.includes('found the write'))).toBe(true)
    },
    60_000,
  )

  it('against a dead upstream shallot sends no more tool requests than the AI SDK alone', async () => {
    const bare = await episode('ai-sdk', 'forecast', 'dead_upstream')
    for (const id of ['shallot', 'ai-sdk+shallot']) {
      const result = await episode(id, 'forecast', 'dead_upstream')
      expect(result.status, id).toBe('success')
      expect(result.toolExecutions, id).toBeLessThanOrEqual(bare.toolExecutions)
    }
  }, 60_000)

  it('against a dead upstream the used-fully row asks the mirror at the first failure: fewer requests and less time than the AI SDK alone', async () => {
    const bare = await episode('ai-sdk', 'forecast', 'dead_upstream')
    const full = await episode('shallot-full', 'forecast', 'dead_upstream')
    expect(full.status).toBe('success')
    expect(full.toolExecutions).toBeLessThan(bare.toolExecutions)
    expect(full.virtualMs).toBeLessThan(bare.virtualMs)
    expect(full.trace.some((line) => line.text.includes('get_forecast_mirror'))).toBe(true)
  }, 60_000)
})

describe('the outage faults', () => {
  const refund = TASKS.find((t) => t.id === 'refund')?.faultTargets ?? { reads: [], writes: [], mirrored: [] }

  it('put three 429s in a row on the model, and two landed-then-timed-out requests on the write', () => {
    expect(singleFaultSchedule('model_429_x3', 1, refund)?.model).toEqual([undefined, 'model_429', 'model_429', 'model_429'])
    expect(singleFaultSchedule('write_timeout_after_effect_x2', 1, refund)?.tools).toEqual({
      refund_payment: ['write_timeout_after_effect', 'write_timeout_after_effect'],
    })
  })

  it('keep the mixed schedule as it was: no outage is drawn there', () => {
    const many = Array.from({ length: 200 }, (_, i) => mixedSchedule(hashSeed(i), refund).model)
    expect(many.flat().some((fault) => fault === 'model_503_30s' || fault === 'model_429_ra120')).toBe(false)
  })

  it('a 503 outage answers every model request for 30 s from its first, then lets them through', () => {
    let now = 0
    const world = new World({ tools: {}, model: [undefined, 'model_503_30s'], dead: [] }, () => now)
    expect(world.nextModelFault().fault).toBeUndefined()
    expect(world.nextModelFault().fault).toBe('model_503')
    now = 29_999
    expect(world.nextModelFault().fault).toBe('model_503')
    now = 30_001
    expect(world.nextModelFault().fault).toBeUndefined()
  })

  it('a 429 with Retry-After 120 s means it: every request inside the window is refused with what is left of it', () => {
    let now = 0
    const world = new World({ tools: {}, model: ['model_429_ra120'], dead: [] }, () => now)
    expect(world.nextModelFault()).toMatchObject({ fault: 'model_429_ra120', retryAfterSeconds: 120 })
    now = 60_500
    expect(world.nextModelFault()).toMatchObject({ fault: 'model_429_ra120', retryAfterSeconds: 60 })
    now = 120_000
    expect(world.nextModelFault().fault).toBeUndefined()
  })
})

describe('the outage rows, one episode each, as the bench runs them', () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())

  async function episode(contenderId: string, taskId: string, kind: Parameters<typeof scheduleOf>[0]) {
    const contender = CONTENDERS.find((c) => c.id === contenderId)
    const task = TASKS.find((t) => t.id === taskId)
    const schedule = task && scheduleOf(kind, 1, task, 0)
    if (contender === undefined || task === undefined || schedule === undefined) throw new Error(`no ${contenderId} ${taskId} ${kind}`)
    const endpoint = await startEndpoint()
    try {
      return await runEpisode(endpoint, contender, task, schedule)
    } finally {
      await endpoint.close()
    }
  }

  it.each(['model_429_x3', 'model_503_30s'] as const)(
    'every shallot row completes the refund through %s; the AI SDK alone does not',
    async (kind) => {
      expect((await episode('ai-sdk', 'refund', kind)).status).not.toBe('success')
      for (const id of ['shallot', 'shallot+reconcile', 'shallot-full']) {
        expect(await episode(id, 'refund', kind), id).toMatchObject({ status: 'success', duplicates: 0 })
      }
    },
    120_000,
  )

  it('a 120 s Retry-After: the used-fully row parks and completes after the resume, sending nothing until it ends; the plain row stops', async () => {
    const full = await episode('shallot-full', 'refund', 'model_429_ra120')
    expect(full).toMatchObject({ status: 'success', duplicates: 0 })
    const models = full.trace.filter((line) => line.text.startsWith('model #'))
    const pushedBack = models.findIndex((line) => line.text.includes('Retry-After: 120'))
    expect(models[pushedBack + 1]?.at).toBeGreaterThanOrEqual((models[pushedBack]?.at ?? 0) + 120_000)
    expect((await episode('shallot', 'refund', 'model_429_ra120')).status).toBe('stopped')
  }, 60_000)

  it('the used-fully row completes a keyed refund that landed and then timed out twice: once, through its lookup', async () => {
    const result = await episode('shallot-full', 'refund', 'write_timeout_after_effect_x2')
    expect(result).toMatchObject({ status: 'success', duplicates: 0, effects: 1 })
    expect(result.trace.some((line) => line.text.includes('found the write under that key'))).toBe(true)
  }, 60_000)
})
