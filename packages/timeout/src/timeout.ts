import {
  type AbortSource,
  abortReason,
  type DeferredSignal,
  type LoopError,
  type Middleware,
  type Next,
  onAbort,
  parseOptions,
  type ToolContext,
  type ToolError,
} from '@shallot/core'
import { z } from 'zod'
import { errorLabel, type LateOutcome, reportLate, type StopReason } from './report-late.js'
import { startTimer } from './start-timer.js'
import { timeoutError } from './timeout-error.js'

/** The longest deadline a JavaScript timer can hold (2^31 − 1 ms, about 24.8 days); longer ones would fire at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647

const duration = z.number().int().positive().max(MAX_TIMEOUT_MS)

/** Options of {@link timeout}. */
export const timeoutOptionsSchema = z
  .object({
    /** Deadline of each attempt, in milliseconds. Default 30,000. */
    ms: duration.default(30_000),
    /** Deadlines for particular tools, by tool name; they replace `ms` for that tool. */
    tools: z.record(z.string().min(1), duration).default({}),
  })
  .strict()

/** What {@link timeout} accepts. */
export type TimeoutOptions = z.input<typeof timeoutOptionsSchema>

/**
 * The signal the timeout hands to the inner layers, created only if somebody reads it. A class, so
 * every attempt's instance shares one shape (an object literal with getters would not). Core follows
 * it through `onAbort` without creating it, so a tool that reads its signal costs one controller.
 */
class DeadlineSignal implements DeferredSignal {
  aborted = false
  reason: unknown = undefined
  #controller: AbortController | undefined
  #waiting: (() => void)[] | undefined

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort(this.reason)
    }
    return this.#controller.signal
  }

  onAbort(callback: () => void): () => void {
    if (this.aborted) {
      callback()
      return noop
    }
    if (this.#waiting === undefined) this.#waiting = []
    const waiting = this.#waiting
    waiting.push(callback)
    return () => {
      const index = waiting.indexOf(callback)
      if (index >= 0) waiting.splice(index, 1)
    }
  }

  abort(why: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = why
    this.#controller?.abort(why)
    const waiting = this.#waiting
    this.#waiting = undefined
    if (waiting === undefined) return
    for (const callback of waiting) {
      try {
        callback()
      } catch {
        // A follower's failure must not keep the others (or the deadline) from taking effect.
      }
    }
  }
}

const noop = () => {}

/** Gives the outer layers back the signal they had, without creating it if it was deferred. */
function restore(ctx: ToolContext, signal: AbortSource): void {
  if (signal instanceof AbortSignal) ctx.signal = signal
  else ctx.deferSignal(signal)
}

/**
 * Gives every attempt a deadline. The layers inside see a `ctx.signal` that also aborts at the
 * deadline (its reason is the timeout error), so cooperative tools stop; the layers outside get
 * their own signal back. A missed deadline throws a soft, retryable `ToolError('timeout')`
 * ("Tool 'x' timed out after 2s"); a cancelled run throws `LoopError('cancelled')` instead.
 * A result or failure that arrives after either is logged as late, emitted as `timeout.late`,
 * and otherwise ignored. Put it inside `retry()` so each attempt gets the full deadline.
 *
 * @example
 * const stack = createStack({
 *   tools: [search, chargeCard],
 *   middleware: [panicCatcher(), retry(), timeout({ ms: 5000, tools: { charge_card: 20_000 } })],
 * })
 */
export function timeout(options?: TimeoutOptions): Middleware {
  const { ms, tools } = parseOptions('timeout()', timeoutOptionsSchema, options)
  const limits = new Map(Object.entries(tools))

  return async function timeout(ctx: ToolContext, next: Next): Promise<void> {
    const outer = ctx.currentSignal()
    if (outer.aborted) throw abortReason(outer)
    const timeoutMs = limits.get(ctx.call.name) ?? ms
    const attempt = ctx.attempt
    let stoppedAt = 0
    let stopped: StopReason | undefined
    let reason: unknown
    try {
      await new Promise<void>((resolve, reject) => {
        // The inner layers get a deferred signal: an AbortController exists only if the tool reads it.
        const deferred = new DeadlineSignal()
        const abortInner = (why: unknown) => deferred.abort(why)
        let waiting = true
        const stopWaiting = (): boolean => {
          if (!waiting) return false
          waiting = false
          restore(ctx, outer)
          cancelTimer()
          offOuter()
          return true
        }
        const giveUp = (why: StopReason, error: ToolError | LoopError) => {
          if (!stopWaiting()) return
          stopped = why
          stoppedAt = ctx.clock.now()
          reject(error)
        }
        const onOuterAbort = () => {
          reason = outer.reason
          abortInner(reason)
          giveUp('cancelled', abortReason(outer))
        }
        const cancelTimer = startTimer(ctx.clock, timeoutMs, () => {
          if (!waiting) return
          const error = timeoutError(ctx.call.name, ctx.tool, timeoutMs, attempt)
          // The reason the inner layers see is the timeout itself, so the terminal's late-result guard throws it.
          reason = error
          abortInner(error)
          giveUp('expired', error)
        })
        const offOuter = onAbort(outer, onOuterAbort)
        ctx.deferSignal(deferred)
        let work: Promise<void>
        try {
          work = next()
        } catch (err) {
          work = Promise.reject(err)
        }
        const late = (outcome: LateOutcome, error?: string) =>
          reportLate(ctx, { attempt, timeoutMs, after: stopped, outcome, lateByMs: ctx.clock.now() - stoppedAt, error })
        work.then(
          () => {
            if (stopWaiting()) resolve()
            else late('resolved')
          },
          (err: unknown) => {
            if (stopWaiting()) reject(err)
            else if (err === reason) late('stopped')
            else late('rejected', errorLabel(err))
          },
        )
      })
    } catch (err) {
      if (stopped === 'expired') {
        ctx.log.info({ attempt, timeoutMs }, 'tool call timed out')
        ctx.emit('timeout.expired', { attempt, timeoutMs })
      }
      throw err
    }
  }
}
