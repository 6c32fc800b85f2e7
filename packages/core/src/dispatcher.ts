import type { CallContext } from './call-context.js'
import { type AbortSource, abortReason, canAbort, untilAborted } from './channel.js'
import { MiddlewareUsageError } from './compose.js'
import { droppedRetryAfter, type ToolError } from './errors.js'
import { LinkedSignal } from './linked-signal.js'
import { RunStop } from './run-stop.js'
import type { Logger, ToolCall, ToolExecuteContext } from './types.js'

// The refusals live in a leaf file: call-args.ts needs them, and importing them from here closed a circle
// (dispatcher -> call-context -> call-args -> dispatcher).
export { invalidArguments, unknownTool } from './tool-refusals.js'

/**
 * What `execute` receives. A class so its `signal` getter lives on the prototype (one shape for every
 * call). The signal is the attempt's own: it follows the attempt's source, is created only when the
 * tool reads it, and is aborted when the attempt settles, so work the tool left running stops.
 */
class AttemptContext implements ToolExecuteContext {
  readonly #source: AbortSource
  #linked: LinkedSignal | undefined
  #closed = false
  readonly call: ToolCall
  readonly idempotencyKey: string | undefined
  readonly attempt: number
  readonly log: Logger

  constructor(call: ToolCall, source: AbortSource, idempotencyKey: string | undefined, attempt: number, log: Logger) {
    this.call = call
    this.#source = source
    this.idempotencyKey = idempotencyKey
    this.attempt = attempt
    this.log = log
  }

  get signal(): AbortSignal {
    let linked = this.#linked
    if (linked === undefined) {
      linked = new LinkedSignal(this.#source)
      this.#linked = linked
      if (this.#closed) linked.close()
    }
    return linked.signal
  }

  close(): void {
    this.#closed = true
    this.#linked?.close()
  }
}

const isPromise = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | null)?.then === 'function'

/**
 * Whether the terminal itself must stop waiting when `source` aborts. A run's (its stop too) or a
 * dispatch's signal has nobody else to do it; a signal a layer deferred (the timeout's) is watched by that
 * layer, which stops waiting and reports the late settle itself.
 */
function mustWatch(source: AbortSource): boolean {
  return source instanceof AbortSignal ? canAbort(source) : source instanceof LinkedSignal || source instanceof RunStop
}

function noteDroppedRetryAfter(ctx: CallContext, err: unknown): void {
  // A WeakMap lookup, so a hostile thrown Proxy cannot throw from here: only real ToolErrors are in it.
  const dropped = droppedRetryAfter(err)
  if (dropped === undefined) return
  ctx.log.warn(
    { code: (err as ToolError).code, retryAfterMs: String(dropped.value) },
    "dropped the retryAfterMs of the tool's error: it is not a finite number of milliseconds >= 0",
  )
}

/**
 * The innermost step of every stack: validates the arguments with the tool's schema, spends one
 * step of the run's budget, runs the tool and sets `ctx.result`. It stops waiting when the attempt's
 * signal aborts, and a result that arrives after that is dropped, so an abandoned attempt can never
 * change state. The tool runs at most once per attempt: only retry, by bumping `ctx.attempt`, may
 * run it again.
 */
export function createTerminal() {
  return async function terminal(ctx: CallContext): Promise<void> {
    const tool = ctx.tool
    // The call's one parse answers an unknown tool too (`unknown_tool`, with the names it could have meant).
    if (tool === undefined) throw (ctx.parsedArgs() as { readonly error: unknown }).error
    // This attempt's signal, captured now: a deferred one is only created if the tool reads it.
    const current = ctx.currentSignal()
    if (current.aborted) throw abortReason(current)
    // Parsed once per call, shared with every layer that read it first (idempotency, stuck-loop).
    const args = ctx.args
    if (ctx.executedAttempt === ctx.attempt) {
      throw new MiddlewareUsageError(
        `next() reached tool "${tool.name}" a second time in attempt ${ctx.attempt}, after the tool already ran; ` +
          'a layer may repeat a call only as a new attempt (increment ctx.attempt before calling next() again, as retry() does)',
      )
    }
    ctx.run.budget.spend(`tool:${tool.name}`)
    ctx.executions++
    ctx.executedAttempt = ctx.attempt
    const context = new AttemptContext(ctx.call, current, ctx.idempotencyKey, ctx.attempt, ctx.log)
    let value: unknown
    try {
      value = tool.execute(args, context)
      // A sync tool's answer is kept at once; an async one is waited for until the attempt's signal aborts.
      if (isPromise(value)) value = await (mustWatch(current) ? untilAborted(value, current) : value)
    } catch (err) {
      noteDroppedRetryAfter(ctx, err)
      throw err
    } finally {
      context.close()
    }
    // A result that arrives after the attempt was stopped is dropped.
    if (current.aborted) throw abortReason(current)
    ctx.result = { value }
  }
}
