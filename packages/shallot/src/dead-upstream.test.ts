import { createAgent } from '@shallot/agent'
import { defineTool, type LayerEntry, type Middleware } from '@shallot/core'
import { type ManualClock, manualClock, scriptedModel, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defaultMiddleware, panicCatcher } from './index.js'

/** What one failing request to the upstream costs before it fails. */
const LATENCY_MS = 1000
/** retry()'s default: the first call and two retries. */
const ATTEMPTS = 3

const deadUpstream = {
  '503 without Retry-After': () => Object.assign(new Error('Service Unavailable'), { name: 'HTTPError', status: 503, headers: {} }),
  'connection refused': () =>
    new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 93.184.216.34:443'), { code: 'ECONNREFUSED' }) }),
}

/** A lookup whose upstream is dead: every request waits LATENCY_MS, then fails the same way. */
function deadLookup(clock: ManualClock, fail: () => unknown) {
  const counter = { executions: 0 }
  const tool = defineTool({
    name: 'find_order',
    description: 'Looks an order up',
    input: z.object({ id: z.string() }),
    effect: 'read',
    execute: async (_args, { signal }) => {
      counter.executions++
      await clock.sleep(LATENCY_MS, signal)
      throw fail()
    },
  })
  return Object.assign(counter, { tool })
}

/** A model that repeats a failing call twice, then gives up: three calls, the way the bench's model does. */
const stubbornThenGivesUp = () => {
  const lookup = { name: 'find_order', args: { id: 'ORD-1' } }
  return scriptedModel([{ toolCalls: [lookup] }, { toolCalls: [lookup] }, { toolCalls: [lookup] }, { text: 'the order service is down' }])
}

async function runOnce(middleware: LayerEntry<Middleware>[], fail: () => unknown, clock = manualClock(), dead = deadLookup(clock, fail)) {
  const model = stubbornThenGivesUp()
  const before = dead.executions
  const agent = createAgent({ model, tools: [dead.tool], middleware, clock, random: seededRandom(7) })
  const started = clock.now()
  let settled = false
  const running = agent.run({ input: 'Where is ORD-1?' }).finally(() => {
    settled = true
  })
  while (!settled) await clock.runAll()
  const outcome = await running
  return { outcome, executions: dead.executions - before, elapsedMs: clock.now() - started, modelCalls: model.requests.length }
}

describe('a dead upstream costs no more than without shallot', () => {
  describe.each(Object.entries(deadUpstream))('%s', (_name, fail) => {
    it('bounds one run: the first call gets its retries, the model’s identical repeats do not, stuck-loop refuses the third', async () => {
      // The framework alone: a thrown error goes back to the model as a failed result, and nothing repeats it.
      const bare = await runOnce([panicCatcher()], fail)
      const shallot = await runOnce(defaultMiddleware(), fail)

      expect(bare.outcome.status).toBe('completed')
      expect(shallot.outcome.status).toBe('completed')
      expect(bare.executions).toBe(3)
      // The bound (decision 407): the model's own calls, plus the retries of its first call only.
      expect(shallot.executions).toBeLessThanOrEqual(bare.executions + (ATTEMPTS - 1))
      // Time: the bare run's, plus those retries' requests and their backoff (full jitter, at most 500 + 1000 ms).
      expect(shallot.elapsedMs).toBeLessThanOrEqual(bare.elapsedMs + (ATTEMPTS - 1) * LATENCY_MS + 1500)
    })

    it('bounds a fleet: attempts count toward the breaker, so the circuit opens before a third run pays for the dead tool', async () => {
      const clock = manualClock()
      const dead = deadLookup(clock, fail)
      const middleware = defaultMiddleware()
      const perRun: number[] = []
      for (let run = 0; run < 4; run++) perRun.push((await runOnce(middleware, fail, clock, dead)).executions)
      // consecutive({ threshold: 5 }) by default: it opens once 5 attempts failed; the call that crosses it may overshoot by its retries.
      expect(dead.executions).toBeLessThanOrEqual(5 + (ATTEMPTS - 1))
      expect(perRun.slice(2)).toEqual([0, 0])
    })
  })
})
