import { abortReason, type ModelContext, type ModelMiddleware, type ModelNext, ToolError } from '@shallot/core'
import { callNext, optionsParser, startTimer } from '@shallot/core/kit'
import { type TimeoutOptions, timeoutOptionsSchema } from './timeout.js'

/** A model attempt's deadline when the options give no `ms`: core's `limits.modelTimeoutMs` default. */
export const DEFAULT_MODEL_TIMEOUT_MS = 60_000

const parseTimeoutOptions = optionsParser('timeoutModel()', timeoutOptionsSchema)

/** The options as `timeoutModel` reads them, parsed. */
type ParsedTimeoutOptions = ReturnType<typeof parseTimeoutOptions>

/**
 * Gives every model attempt a deadline: `models[ctx.model.name]`, else `ms`, else 60 s. The layers
 * inside see a `ctx.signal` that also aborts at the deadline, with the timeout as its reason (core's
 * terminal stops the attempt and drops a late answer); the layers outside get their signal back. A
 * missed deadline throws `ToolError('timeout', 'the model did not answer within N ms')`, transient
 * and retryable, the same error core's own deadline throws, so a retry layer outside repeats it. A
 * cancelled run throws its reason at once. Put it inside `retryModel()` so each attempt gets the
 * whole deadline.
 *
 * Core's `limits.modelTimeoutMs` (default 60 s) still bounds every attempt in the terminal until
 * it becomes sugar for this layer (decision 500, step 3): the shorter deadline wins (decision 510).
 *
 * @example
 * createAgent({ model, tools, modelMiddleware: [retryModel(), timeoutModel({ ms: 20_000, models: { 'gpt-slow': 50_000 } })] })
 */
export function timeoutModel(options?: TimeoutOptions): ModelMiddleware {
  return modelDeadlineOf(parseTimeoutOptions(options))
}

/** The layer for parsed options (what the definition's `createModel` builds). */
export function modelDeadlineOf(options: ParsedTimeoutOptions): ModelMiddleware {
  const limits = new Map(Object.entries(options.models))
  const defaultMs = options.ms ?? DEFAULT_MODEL_TIMEOUT_MS

  return function timeout(ctx: ModelContext, next: ModelNext): Promise<void> {
    const outer = ctx.signal
    if (outer.aborted) return Promise.reject(abortReason(outer))
    const timeoutMs = limits.get(ctx.model.name) ?? defaultMs
    const inner = new AbortController()
    return new Promise<void>((resolve, reject) => {
      let waiting = true
      let cancelTimer: () => void = noop
      // Whichever comes first of the answer, the deadline and the run's cancellation decides; it gives the signal back.
      const finish = (): boolean => {
        if (!waiting) return false
        waiting = false
        cancelTimer()
        outer.removeEventListener('abort', onOuter)
        ctx.signal = outer
        return true
      }
      const onOuter = () => {
        inner.abort(outer.reason)
        if (finish()) reject(abortReason(outer))
      }
      outer.addEventListener('abort', onOuter, { once: true })
      cancelTimer = startTimer(ctx.clock, timeoutMs, () => {
        const error = new ToolError('timeout', `the model did not answer within ${timeoutMs} ms`)
        // The reason the inner layers see is the timeout itself: the terminal fails the attempt with it.
        inner.abort(error)
        if (finish()) reject(error)
      })
      ctx.signal = inner.signal
      callNext(next as () => Promise<void>).then(
        () => {
          if (finish()) resolve()
        },
        (err: unknown) => {
          if (finish()) reject(err)
        },
      )
    })
  }
}

const noop = () => {}
