import { LoopError, type MiddlewareDefinition, type MiddlewareEnv, ToolError } from '@shallot/core'
import { expect } from 'vitest'
import { flush, transient } from './conformance-harness.js'
import { modelHarness } from './model-conformance-harness.js'

/** The model-call checks of `middlewareConformance`, by name, for `knownFailures`. */
export type ModelConformanceCheck =
  | 'model-loop-error'
  | 'model-tool-error'
  | 'model-sequential-next'
  | 'model-abort-mid-call'
  | 'model-abort-mid-wait'
  | 'model-no-leaks'
  | 'model-options'

type Check = (name: ModelConformanceCheck, title: string, body: () => Promise<void> | void) => void

const answer = (text: string) => ({ text, toolCalls: [] })
const cancelled = () => new Error('conformance: cancelled by the caller')

/**
 * The contract of a model-call layer, checked in a real agent: the run's outcome is what the user
 * sees, so a LoopError must end the run as the same object and a failure must never end it as completed.
 */
export function modelConformanceChecks(
  definition: MiddlewareDefinition,
  options: { validOptions?: unknown; env?: MiddlewareEnv; invalidOptions?: readonly unknown[] },
  check: Check,
): void {
  check('model-loop-error', 'model calls: passes a LoopError from inside through untouched (the same object)', async () => {
    const h = modelHarness(definition, options)
    const hard = new LoopError('fatal', 'conformance: the run must end here')
    h.setBehaviour(() => Promise.reject(hard))
    const outcome = await h.run()
    expect(outcome.status === 'stopped' && outcome.error).toBe(hard)
  })

  check('model-tool-error', 'model calls: does not turn a failing model into a completed run', async () => {
    for (const make of [transient, () => new ToolError('invalid_request', 'conformance: bad request', { category: 'user' })]) {
      const h = modelHarness(definition, options)
      h.setBehaviour(() => Promise.reject(make()))
      const outcome = await h.run()
      expect(outcome.status).toBe('stopped')
    }
  })

  check('model-sequential-next', 'model calls: never calls next() while an earlier next() of the same call is pending', async () => {
    const h = modelHarness(definition, options)
    h.setBehaviour(async (asked, request, clock) => {
      await clock.sleep(100, request.signal)
      if (asked < 3) throw transient()
      return answer('done')
    })
    await h.run()
    expect(h.probe.overlaps).toBe(0)
  })

  check('model-abort-mid-call', 'model calls: does not call next() again once the run was cancelled during the call', async () => {
    const h = modelHarness(definition, options)
    h.setBehaviour(() => {
      h.controller.abort(cancelled())
      return Promise.reject(transient())
    })
    const outcome = await h.run()
    expect(h.probe.calls).toBe(1)
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('cancelled')
  })

  check('model-abort-mid-wait', 'model calls: stops and calls next() no more when the run is cancelled while it waits', async () => {
    const h = modelHarness(definition, options)
    h.setBehaviour(() => Promise.reject(transient()))
    const pending = h.start()
    await flush()
    h.controller.abort(cancelled())
    const outcome = await h.drive(pending)
    expect(h.probe.afterAbort).toBe(0)
    expect(outcome.status).toBe('stopped')
  })

  check('model-no-leaks', 'model calls: leaves no timer and no abort listener behind, whatever the outcome', async () => {
    const behaviours = [
      async () => answer('fast'),
      async (_asked: number, request: { signal: AbortSignal }, clock: { sleep(ms: number, s: AbortSignal): Promise<void> }) => {
        await clock.sleep(50, request.signal)
        return answer('slow')
      },
      () => Promise.reject(transient()),
    ]
    for (const behaviour of behaviours) {
      const h = modelHarness(definition, options)
      h.setBehaviour(behaviour)
      await h.run()
      expect(h.leftovers()).toEqual({ clockSleeps: 0, timers: 0, abortListeners: 0 })
    }
    const h = modelHarness(definition, options)
    h.setBehaviour((_asked, request, clock) => clock.sleep(30_000, request.signal).then(() => answer('too late')))
    const pending = h.start()
    await flush()
    h.controller.abort(cancelled())
    await h.drive(pending)
    expect(h.leftovers()).toEqual({ clockSleeps: 0, timers: 0, abortListeners: 0 })
  })

  check('model-options', 'model calls: refuses garbage options with a clear message naming the option', () => {
    expect(() => definition.buildModel(options.validOptions, options.env)).not.toThrow()
    const garbage: unknown[] = [{ surely_not_an_option: 1 }, 42, 'garbage', [1, 2], ...(options.invalidOptions ?? [])]
    for (const input of garbage) {
      let thrown: unknown
      try {
        definition.buildModel(input, options.env)
      } catch (err) {
        thrown = err
      }
      expect(thrown, `options ${JSON.stringify(input)} were accepted`).toBeInstanceOf(Error)
      const message = (thrown as Error).message
      expect(message).not.toMatch(/\n\s+at /)
      if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
        const keys = Object.keys(input)
        expect(
          keys.some((key) => message.includes(key)),
          `"${message}" names none of ${keys.join(', ')}`,
        ).toBe(true)
      }
    }
  })
}
