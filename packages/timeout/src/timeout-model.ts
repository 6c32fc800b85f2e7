import { abortReason, type ModelContext, type ModelMiddleware, type ModelNext, systemClock, ToolError } from '@shallot/core'
import { callNext, onAbort, SignalLink, startTimer } from '@shallot/core/kit'
import { type DeadlineQueue, deadlineQueue, type Expiring } from './deadline-queue.js'

/**
 * A model attempt's deadline when the options give no `ms`.
 *
 * @example
 * timeout().wrapModelCall // cuts a model attempt at DEFAULT_MODEL_TIMEOUT_MS
 */
export const DEFAULT_MODEL_TIMEOUT_MS = 60_000

/**
 * `timeout()`'s model side: a deadline per model attempt, `models[ctx.model.name]`, else `ms`, else 60 s.
 * The layers inside see a `ctx.signal` that also aborts at the deadline, with the timeout as its reason
 * (core's terminal stops the attempt and drops a late answer); the layers outside get their signal back.
 * A missed deadline throws `ToolError('timeout', 'the model did not answer within N ms')`, transient and
 * retryable, the same error core's own deadline throws. A cancelled run throws its reason at once.
 */
export function modelDeadlineOf(options: {
  readonly ms?: number | undefined
  readonly models: Readonly<Record<string, number>>
}): ModelMiddleware {
  const limits = new Map(Object.entries(options.models))
  const defaultMs = options.ms ?? DEFAULT_MODEL_TIMEOUT_MS

  return function timeout(ctx: ModelContext, next: ModelNext): Promise<void> {
    const outer = ctx.signal
    if (outer.aborted) return Promise.reject(abortReason(outer))
    return new ModelDeadline(ctx, outer, limits.get(ctx.model.name) ?? defaultMs).run(next)
  }
}

/**
 * One model call under a deadline. Whichever comes first of the answer, the deadline and the run's
 * cancellation decides; it gives the signal back. On the real clock the deadline is an entry in the
 * process's queue for its duration (this package's `deadlineQueue`, as the tool timeout uses), not a timer of
 * its own: a model call that answers costs no `setTimeout`.
 */
class ModelDeadline implements Expiring {
  deadline = 0
  prevDue: Expiring | undefined = undefined
  nextDue: Expiring | undefined = undefined
  queue: DeadlineQueue | undefined = undefined
  readonly #inner = new SignalLink()
  #waiting = true
  #cancelTimer: () => void = noop
  #offOuter: () => void = noop
  #resolve: () => void = noop
  #reject: (err: unknown) => void = noop

  constructor(
    readonly ctx: ModelContext,
    readonly outer: AbortSignal,
    readonly timeoutMs: number,
  ) {}

  run(next: ModelNext): Promise<void> {
    const { ctx, outer } = this
    const promise = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    this.#offOuter = onAbort(outer, () => {
      this.#inner.abort(outer.reason)
      if (this.#finish()) this.#reject(abortReason(outer))
    })
    if (ctx.clock === systemClock) deadlineQueue(this.timeoutMs).add(this, ctx.clock.now())
    else this.#cancelTimer = startTimer(ctx.clock, this.timeoutMs, () => this.expire())
    ctx.signal = this.#inner
    callNext(next as () => Promise<void>).then(
      () => {
        if (this.#finish()) this.#resolve()
      },
      (err: unknown) => {
        if (this.#finish()) this.#reject(err)
      },
    )
    return promise
  }

  expire(): void {
    if (!this.#waiting) return
    const error = new ToolError('timeout', `the model did not answer within ${this.timeoutMs} ms`)
    // The reason the inner layers see is the timeout itself: the terminal fails the attempt with it.
    this.#inner.abort(error)
    if (this.#finish()) this.#reject(error)
  }

  #finish(): boolean {
    if (!this.#waiting) return false
    this.#waiting = false
    this.queue?.remove(this)
    this.#cancelTimer()
    this.#offOuter()
    this.ctx.signal = this.outer
    return true
  }
}

const noop = () => {}
