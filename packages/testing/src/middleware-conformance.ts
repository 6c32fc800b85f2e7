import { LoopError, type Middleware, type MiddlewareDefinition, type MiddlewareEnv, ToolError } from '@shallot/core'
import { canonicalJson } from '@shallot/core/kit'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ARGS, type Behaviour, deepFreeze, flush, harness, isSuccess, transient } from './conformance-harness.js'
import { type ModelConformanceCheck, modelConformanceChecks } from './model-conformance.js'

/** The checks of {@link middlewareConformance}, by name, for `knownFailures`. */
export type ConformanceCheck =
  | 'loop-error'
  | 'tool-error'
  | 'sequential-next'
  | 'abort-mid-call'
  | 'abort-mid-wait'
  | 'aborted-on-entry'
  | 'no-leaks'
  | 'args-untouched'
  | 'options'
  | ModelConformanceCheck

export interface ConformanceOptions {
  /** Options the middleware is built with for every check. Default: none (its defaults). */
  validOptions?: unknown
  /** Options it must refuse, each with an error whose message names the option; some garbage is always tried too. */
  invalidOptions?: readonly unknown[]
  /** What `create` receives besides the options. */
  env?: MiddlewareEnv
  /**
   * Also check that a call reaching the layer with its signal already aborted is not passed inward.
   * Off by default: the terminal dispatcher refuses an aborted attempt before the tool runs, so
   * passing one on is harmless; the contract is that a layer starts no new inner work (a repeat,
   * a wait) once it could have seen the abort.
   */
  abortOnEntry?: boolean
  /** Checks known to fail: they run as `it.fails`, so a fix shows up as a failure to remove the entry. */
  knownFailures?: readonly ConformanceCheck[]
}

/**
 * Registers a vitest suite that checks the contract every shallot middleware keeps: a LoopError
 * passes through as the same object; a ToolError never becomes a success; next() is never called
 * while an earlier next() is pending, nor once the signal has aborted; no timer or abort listener
 * is left behind; `call.args` (deep-frozen here) are never mutated; and the options schema refuses
 * garbage with a message naming the option. The layer runs in a real stack on a manual clock, with
 * timers faked, so the suite itself never sleeps. A definition with `createModel` is held to the
 * same contract for model calls, in a real agent (the `model-*` checks); one without `create` skips
 * the tool-call checks.
 *
 * @example
 * import { middlewareConformance } from '@shallot/testing'
 * import rateLimit from './index.js'
 *
 * middlewareConformance(rateLimit, { validOptions: { rps: 5 }, invalidOptions: [{ rps: -1 }, { rps: 'fast' }] })
 */
export function middlewareConformance(definition: MiddlewareDefinition, options: ConformanceOptions = {}): void {
  const known = new Set(options.knownFailures ?? [])
  const register = (name: ConformanceCheck, title: string, body: () => Promise<void> | void) =>
    (known.has(name) ? it.fails : it)(title, body)
  // A definition made by an older core has no `handles`: it wraps tool calls only.
  const handles = definition.handles ?? { tools: true, models: false }
  const check: Check = handles.tools ? register : () => {}

  describe(`${definition.name} conformance`, () => {
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })
    })
    afterEach(() => {
      vi.useRealTimers()
    })

    outcomeChecks(definition, options, check)
    hygieneChecks(definition, options, check)
    if (handles.models) modelConformanceChecks(definition, options, register)

    optionsCheck(definition, options, check)
  })
}

/** Registers one check, or none (a check the definition's calls do not take). */
type Check = (name: ConformanceCheck, title: string, body: () => Promise<void> | void) => void

/** What a layer does to a call's outcome: hard errors untouched, soft errors kept, next() in turn and never after an abort. */
function outcomeChecks(definition: MiddlewareDefinition, options: ConformanceOptions, check: Check): void {
  check('loop-error', 'passes a LoopError from inside through untouched (the same object)', async () => {
    const h = harness(definition, options)
    const hard = new LoopError('fatal', 'conformance: the run must end here')
    h.setBehaviour(async () => {
      throw hard
    })
    const outcome = await h.dispatch()
    expect(outcome.settled).toBe('rejected')
    if (outcome.settled === 'rejected') expect(outcome.error).toBe(hard)
  })

  check('tool-error', 'does not turn a ToolError into a success', async () => {
    for (const make of [transient, () => new ToolError('not_found', 'conformance: no such order', { category: 'recoverable' })]) {
      const h = harness(definition, options)
      h.setBehaviour(async () => {
        throw make()
      })
      const outcome = await h.dispatch()
      expect(isSuccess(outcome)).toBe(false)
      if (outcome.settled === 'rejected') expect(LoopError.is(outcome.error)).toBe(true)
    }
  })

  check('sequential-next', 'never calls next() while an earlier next() of the same call is pending', async () => {
    const h = harness(definition, options)
    h.setBehaviour(async (attempt, context, clock) => {
      await clock.sleep(100, context.signal)
      if (attempt < 3) throw transient()
      return 'done'
    })
    const outcomes = await Promise.all([h.drive(h.start()), h.drive(h.start()), h.drive(h.start())])
    expect(h.probe.overlaps).toBe(0)
    for (const outcome of outcomes) {
      if (outcome.settled === 'rejected') expect((outcome.error as LoopError).kind).not.toBe('tool_crashed')
    }
  })

  check('abort-mid-call', 'does not call next() again once the signal aborted during the call', async () => {
    const h = harness(definition, options)
    h.setBehaviour(async () => {
      h.controller.abort(new Error('conformance: cancelled by the caller'))
      throw transient()
    })
    const outcome = await h.dispatch()
    expect(h.probe.calls).toBe(1)
    expect(isSuccess(outcome)).toBe(false)
  })

  check('abort-mid-wait', 'stops and calls next() no more when the signal aborts while it waits', async () => {
    const h = harness(definition, options)
    h.setBehaviour(async () => {
      throw transient()
    })
    const pending = h.start()
    await flush()
    h.controller.abort(new Error('conformance: cancelled by the caller'))
    const outcome = await h.drive(pending)
    expect(h.probe.afterAbort).toBe(0)
    expect(isSuccess(outcome)).toBe(false)
  })

  if (options.abortOnEntry)
    check('aborted-on-entry', 'does not call next() when the call reaches it with its signal already aborted', async () => {
      const reason = new LoopError('cancelled', 'conformance: aborted by an outer layer')
      const aborter: Middleware = async function aborter(ctx, next) {
        ctx.signal = AbortSignal.abort(reason)
        await next()
      }
      const h = harness(definition, options, [aborter])
      const outcome = await h.dispatch()
      expect(h.probe.calls).toBe(0)
      expect(isSuccess(outcome)).toBe(false)
    })
}

/** What a layer leaves behind: no timer, no abort listener, the call's arguments as they were. */
function hygieneChecks(definition: MiddlewareDefinition, options: ConformanceOptions, check: Check): void {
  check('no-leaks', 'leaves no timer and no abort listener behind, whatever the outcome', async () => {
    const behaviours: Behaviour[] = [
      async () => 'fast success',
      async (_attempt, context, clock) => {
        await clock.sleep(50, context.signal)
        return 'slow success'
      },
      async () => {
        throw transient()
      },
      async () => {
        throw new ToolError('not_found', 'conformance: no such order', { category: 'recoverable' })
      },
    ]
    for (const behaviour of behaviours) {
      const h = harness(definition, options)
      h.setBehaviour(behaviour)
      await h.dispatch()
      expect(h.leftovers()).toEqual({ clockSleeps: 0, timers: 0, abortListeners: 0 })
    }
    const h = harness(definition, options)
    h.setBehaviour((_attempt, context, clock) => clock.sleep(60_000, context.signal).then(() => 'too late'))
    const pending = h.start()
    await flush()
    h.controller.abort(new Error('conformance: cancelled by the caller'))
    await h.drive(pending)
    expect(h.leftovers()).toEqual({ clockSleeps: 0, timers: 0, abortListeners: 0 })
  })

  check('args-untouched', 'does not mutate call.args (they are deep-frozen here)', async () => {
    for (const fail of [false, true]) {
      const h = harness(definition, options)
      const args = deepFreeze(structuredClone(ARGS))
      const before = canonicalJson(args)
      h.setBehaviour(async (attempt) => {
        if (fail && attempt === 1) throw transient()
        return 'ok'
      })
      const outcome = await h.dispatch(args)
      expect(canonicalJson(args)).toBe(before)
      if (outcome.settled === 'rejected') expect((outcome.error as LoopError).kind).not.toBe('tool_crashed')
      if (!fail) expect(isSuccess(outcome)).toBe(true)
    }
  })
}

/** Garbage options are refused with a message naming the option. */
function optionsCheck(definition: MiddlewareDefinition, options: ConformanceOptions, check: Check): void {
  check('options', 'refuses garbage options with a clear message naming the option', () => {
    expect(() => definition.build(options.validOptions, options.env)).not.toThrow()
    const unknownKey = 'surely_not_an_option'
    const garbage: unknown[] = [{ [unknownKey]: 1 }, 42, 'garbage', [1, 2], ...(options.invalidOptions ?? [])]
    for (const input of garbage) {
      let thrown: unknown
      try {
        definition.build(input, options.env)
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
