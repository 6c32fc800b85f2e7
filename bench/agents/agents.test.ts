import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runBench } from './bench.js'
import { looksFailed } from './brain.js'
import { CONTENDERS } from './contenders/index.js'
import { hashSeed, mixedSchedule, singleFaultSchedule } from './faults.js'
import { TASKS } from './tasks.js'
import { installVirtualTime, uninstallVirtualTime } from './virtual-time.js'

describe('the agent bench, one seed', () => {
  beforeAll(() => installVirtualTime())
  afterAll(() => uninstallVirtualTime())

  it('runs every contender on every task under the mixed schedule and the matrix, and each succeeds somewhere', async () => {
    const result = await runBench({ seed: 1, episodes: 1, matrixEpisodes: 1 })
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
