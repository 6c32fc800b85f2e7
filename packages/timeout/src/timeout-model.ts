import {
  abortReason,
  type ModelContext,
  type ModelMiddleware,
  type ModelNext,
  systemClock,
  ToolError,
  trustedModelMiddleware,
} from '@shallot/core'
import { type AbortSource, callNext, onAbort, optionsParser, startTimer } from '@shallot/core/kit'
import { type DeadlineQueue, deadlineQueue, type Expiring } from './deadline-queue.js'
import { DeadlineSignal, type TimeoutOptions, timeoutOptionsSchema } from './timeout.js'

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

  // Keeps the onion's contract as the tool timeout does (decision 270): it settles after next() settled, or, when
  // it stops waiting, follows the abandoned call to its end itself.
  return trustedModelMiddleware(function timeout(ctx: ModelContext, next: ModelNext): Promise<void> {
    // createAgent's context hands a signal on without creating it; another host's gets a real one.
    const outer = ctx.currentSignal?.() ?? ctx.signal
    if (outer.aborted) return Promise.reject(abortReason(outer))
    return new ModelDeadline(ctx, outer, limits.get(ctx.model.name) ?? defaultMs).run(next)
  })
}

/**
 * One model call under a deadline. Whichever comes first of the answer, the deadline and the run's
 * cancellation decides; it gives the signal back. On the real clock the deadline is an entry in the
 * process's queue for its duration (this package's `deadlineQueue`, as the tool timeout uses), not a timer of
 * its own, and the inner layers' signal is made real only if something reads it (`ctx.deferSignal`):
 * a model call that answers costs no `setTimeout` and, for an adapter that never reads its signal,
 * no `AbortController`.
 */
class ModelDeadline implements Expiring {
  deadline = 0
  prevDue: Expiring | undefined = undefined
  nextDue: Expiring | undefined = undefined
  queue: DeadlineQueue | undefined = undefined
  readonly #inner = new DeadlineSignal()
  #waiting = true
  #cancelTimer: () => void = noop
  #offOuter: () => void = noop
  #resolve: () => void = noop
  #reject: (err: unknown) => void = noop

  constructor(
    readonly ctx: ModelContext,
    readonly outer: AbortSource,
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
    if (ctx.deferSignal === undefined) ctx.signal = this.#inner.signal
    else ctx.deferSignal(this.#inner)
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
    const { ctx, outer } = this
    if (outer instanceof AbortSignal) ctx.signal = outer
    else ctx.deferSignal?.(outer)
    return true
  }
}

const noop = () => {}
