import {
  abortReason,
  createRun,
  type Layer,
  type Middleware,
  type ModelMiddleware,
  type Next,
  systemClock,
  type ToolContext,
} from '@shallot/core'
import { callNext, MAX_TIMER_MS, onAbort, optionsParser, SignalLink, startTimer } from '@shallot/core/kit'
import { z } from 'zod'
import { type DeadlineQueue, deadlineQueue, type Expiring } from './deadline-queue.js'
import { errorLabel, type LateOutcome, reportLate, type StopReason } from './report-late.js'
import { timeoutError } from './timeout-error.js'
import { modelDeadlineOf } from './timeout-model.js'

/** A tool attempt's deadline when the options give no `ms`. */
const DEFAULT_TOOL_TIMEOUT_MS = 30_000

const duration = z.number().int().positive().max(MAX_TIMER_MS)

/** Options of {@link timeout}, for tool calls and model calls alike. */
export const timeoutOptionsSchema = z
  .object({
    /** Deadline of each attempt, in milliseconds. Default 30,000 for a tool call, 60,000 for a model call. */
    ms: duration.optional(),
    /** Deadlines for particular tools, by tool name; they replace `ms` for that tool. Tool calls only. */
    tools: z.record(z.string().min(1), duration).default({}),
    /** Deadlines for particular models, by the name the agent gives them; they replace `ms` for that model. Model calls only. */
    models: z.record(z.string().min(1), duration).default({}),
  })
  .strict()

/** What {@link timeout} accepts. */
export type TimeoutOptions = z.input<typeof timeoutOptionsSchema>

/** {@link timeout}'s options, parsed. */
type ParsedTimeoutOptions = z.output<typeof timeoutOptionsSchema>

const parseTimeoutOptions = optionsParser('timeout()', timeoutOptionsSchema)

const noop = () => {}

/** What `createRun()` hands every run without a signal of its own: the library's one signal that never aborts. */
const neverAborted = createRun().signal

/**
 * One attempt under a deadline: the promise the layer returns, and the three ways it ends. `settle`
 * (the inner call finished first), `expire` (the deadline passed), `cancel` (the outer signal
 * aborted). Whichever comes first decides; a `settle` after the others is reported as late and
 * changes nothing.
 */
class TimedAttempt implements Expiring {
  deadline = 0
  prevDue: Expiring | undefined = undefined
  nextDue: Expiring | undefined = undefined
  queue: DeadlineQueue | undefined = undefined
  readonly promise: Promise<void>
  readonly #resolve: () => void
  readonly #reject: (err: unknown) => void
  /** The signal the inner layers get: it aborts at the deadline or with the outer signal. */
  readonly inner = new SignalLink()
  #waiting = true
  #stopped: StopReason | undefined = undefined
  #stoppedAt = 0
  /** The abort reason the inner layers were handed, so their rejection with it reads as "stopped as asked". */
  #reason: unknown = undefined
  #offOuter: () => void = noop
  #cancelTimer: () => void = noop

  constructor(
    readonly ctx: ToolContext,
    readonly outer: AbortSignal,
    readonly timeoutMs: number,
    readonly attempt: number,
  ) {
    let resolve: () => void = noop
    let reject: (err: unknown) => void = noop
    this.promise = new Promise<void>((res, rej) => {
      resolve = res
      reject = rej
    })
    this.#resolve = resolve
    this.#reject = reject
  }

  /** Starts the deadline and follows the outer signal, if it can abort at all. */
  start(): void {
    const { ctx, outer } = this
    if (ctx.clock === systemClock) deadlineQueue(this.timeoutMs).add(this, ctx.clock.now())
    // A virtual clock keeps its own time: the deadline is a timer on it, so tests and `shallot sim` move it.
    else this.#cancelTimer = startTimer(ctx.clock, this.timeoutMs, () => this.expire())
    if (outer !== neverAborted) this.#offOuter = onAbort(outer, () => this.cancel())
    ctx.signal = this.inner
  }

  expire(): void {
    if (!this.#waiting) return
    const { ctx, attempt, timeoutMs } = this
    const error = timeoutError(ctx.call.name, ctx.tool, timeoutMs, attempt)
    // The reason the inner layers see is the timeout itself, so the terminal's late-result guard throws it.
    this.#reason = error
    this.inner.abort(error)
    if (!this.#stop('expired')) return
    try {
      ctx.log.info({ attempt, timeoutMs }, 'tool call timed out')
      ctx.emit('timeout.expired', { attempt, timeoutMs })
    } finally {
      this.#reject(error)
    }
  }

  cancel(): void {
    if (!this.#waiting) return
    const reason = this.outer.reason
    this.#reason = reason
    this.inner.abort(reason)
    if (this.#stop('cancelled')) this.#reject(abortReason(this.outer))
  }

  /** The inner call finished: with `error` when it failed. */
  settle(failed: boolean, error: unknown): void {
    if (this.#waiting) {
      this.#release()
      if (failed) this.#reject(error)
      else this.#resolve()
      return
    }
    const outcome: LateOutcome = !failed ? 'resolved' : error === this.#reason ? 'stopped' : 'rejected'
    const { ctx, attempt, timeoutMs } = this
    reportLate(ctx, {
      attempt,
      timeoutMs,
      after: this.#stopped,
      outcome,
      lateByMs: ctx.clock.now() - this.#stoppedAt,
      error: outcome === 'rejected' ? errorLabel(error) : undefined,
    })
  }

  #stop(why: StopReason): boolean {
    if (!this.#waiting) return false
    this.#release()
    this.#stopped = why
    this.#stoppedAt = this.ctx.clock.now()
    return true
  }

  #release(): void {
    this.#waiting = false
    this.ctx.signal = this.outer
    this.queue?.remove(this)
    this.#cancelTimer()
    this.#offOuter()
  }
}

/** What `timeout()` returns: one layer, with a deadline for tool calls and one for model calls. */
export interface TimeoutLayer extends Layer {
  readonly name: 'timeout'
  /** Listed in `middleware`: a deadline per tool attempt (`tools[name]`, else `ms`, else 30 s). */
  readonly wrapToolCall: Middleware
  /** Listed in `modelMiddleware`: a deadline per model attempt (`models[name]`, else `ms`, else 60 s). */
  readonly wrapModelCall: ModelMiddleware
}

/**
 * Gives every attempt a deadline; one layer for both lists, both sides built here from the same
 * options. The layers inside see a `ctx.signal` that also aborts at the deadline (its reason is the
 * timeout error), so cooperative tools and adapters stop; the layers outside get their own signal
 * back. A cancelled run throws its reason at once. Put it inside `retry()` so each attempt gets the
 * full deadline.
 *
 * - Tool calls (`middleware`): `tools[name]`, else `ms`, else 30 s. A missed deadline throws a soft,
 *   retryable `ToolError('timeout')` ("Tool 'x' timed out after 2s"); a result or failure that
 *   arrives after it is logged as late, emitted as `timeout.late`, and otherwise ignored.
 * - Model calls (`modelMiddleware`): `models[ctx.model.name]`, else `ms`, else 60 s. A missed deadline
 *   throws `ToolError('timeout', 'the model did not answer within N ms')`, transient and retryable,
 *   so a retry layer outside repeats it; core's terminal drops a late answer.
 *
 * On the real clock every deadline of one duration shares one timer, which holds the process open
 * only while a deadline is pending.
 *
 * @example
 * const deadline = timeout({ ms: 5000, tools: { charge_card: 20_000 }, models: { 'gpt-slow': 90_000 } })
 * createAgent({ model, tools, middleware: [retry(), deadline], modelMiddleware: [retry(), deadline] })
 */
export function timeout(options?: TimeoutOptions): TimeoutLayer {
  const parsed = parseTimeoutOptions(options)
  return Object.freeze({ name: 'timeout', wrapToolCall: toolDeadlineOf(parsed), wrapModelCall: modelDeadlineOf(parsed) })
}

/** The tool side: a deadline per tool attempt. */
function toolDeadlineOf({ ms = DEFAULT_TOOL_TIMEOUT_MS, tools }: ParsedTimeoutOptions): Middleware {
  const limits = new Map(Object.entries(tools))
  return function timeout(ctx: ToolContext, next: Next): Promise<void> {
    const outer = ctx.signal
    if (outer.aborted) return Promise.reject(abortReason(outer))
    const attempt = new TimedAttempt(ctx, outer, limits.get(ctx.call.name) ?? ms, ctx.attempt)
    attempt.start()
    // Reactions, not an awaiting frame: a call blocked in the tool keeps two closures here, not a suspended function.
    callNext(next).then(
      () => attempt.settle(false, undefined),
      (err: unknown) => attempt.settle(true, err),
    )
    return attempt.promise
  }
}
