// The agent, model, probe and clock that middlewareConformance runs a model-call layer in. Not exported by the package.
import { getEventListeners } from 'node:events'
import { createAgent, type RunOutcome } from '@shallot/agent'
import type { MiddlewareDefinition, MiddlewareEnv, ModelMiddleware, ModelRequest, ModelResponse } from '@shallot/core'
import { vi } from 'vitest'
import { flush } from './conformance-harness.js'
import { type ManualClock, manualClock } from './manual-clock.js'
import { seededRandom } from './seeded-random.js'

/** What the conformance model does on each request: the model's 1-based request count, the request, the clock. */
export type ModelBehaviour = (asked: number, request: ModelRequest, clock: ManualClock) => Promise<ModelResponse>

/** One agent whose model onion is the layer under test, its every next() watched. */
export function modelHarness(definition: MiddlewareDefinition, options: { validOptions?: unknown; env?: MiddlewareEnv | undefined }) {
  const clock = manualClock()
  const controller = new AbortController()
  const layer = definition.buildModel(options.validOptions, options.env)
  const seen = { calls: 0, afterAbort: 0, overlaps: 0 }
  // The layer's own next() is watched, so a second call while one is pending is counted before compose refuses it.
  const watched: ModelMiddleware = function watched(ctx, next) {
    let pending = 0
    return layer(ctx, () => {
      seen.calls++
      if (ctx.signal.aborted || controller.signal.aborted) seen.afterAbort++
      if (pending > 0) seen.overlaps++
      pending++
      return next().finally(() => {
        pending--
      })
    })
  }
  let behaviour: ModelBehaviour = async () => ({ text: 'ok', toolCalls: [] })
  let asked = 0
  const model = { name: 'conformance-model', generate: (request: ModelRequest) => behaviour(++asked, request, clock) }
  const agent = createAgent({ model, tools: [], modelMiddleware: watched, clock, random: seededRandom(7), limits: { maxSteps: 1000 } })

  const start = (): Promise<RunOutcome> => agent.run({ input: 'conformance', signal: controller.signal })

  /** Runs virtual time (and faked timers) until the run settles. */
  async function drive(pending: Promise<RunOutcome>): Promise<RunOutcome> {
    let outcome: RunOutcome | undefined
    void pending.then((o) => (outcome = o))
    for (let round = 0; round < 200; round++) {
      await flush()
      if (outcome !== undefined) break
      await clock.runAll()
      await flush()
      if (outcome !== undefined) break
      if (vi.isFakeTimers()) await vi.advanceTimersToNextTimerAsync()
    }
    if (outcome === undefined) {
      throw new Error(`${definition.name}: a model call never settled with all virtual time run; wait only on ctx.clock and ctx.signal`)
    }
    // A cancelled run ends at once even if the layer goes on (core races the run's cancel): let what it left run, so the probe sees it.
    await clock.runAll()
    await flush()
    return outcome
  }

  return {
    clock,
    controller,
    probe: seen,
    start,
    drive,
    leftovers: () => ({
      clockSleeps: clock.pending,
      timers: vi.isFakeTimers() ? vi.getTimerCount() : 0,
      abortListeners: getEventListeners(controller.signal, 'abort').length,
    }),
    setBehaviour: (next: ModelBehaviour) => {
      behaviour = next
    },
    run: () => drive(start()),
  }
}
