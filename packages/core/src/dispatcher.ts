import type { CallContext } from './call-context.js'
import { abortReason, SETTLED, SignalLink, untilAborted } from './cancellation.js'
import { MiddlewareUsageError } from './compose.js'
import { droppedRetryAfter, type ToolError } from './errors.js'
import type { Logger, ToolCall, ToolExecuteContext } from './types.js'

// The refusals live in a leaf file: call-args.ts needs them, and importing them from here closed a circle
// (dispatcher -> call-context -> call-args -> dispatcher).
export { invalidArguments, unknownTool } from './tool-refusals.js'

/**
 * What `execute` receives. Its signal is the tool's own: it follows the attempt's, aborts once the
 * attempt settles (so work the tool left running stops), and is made only if the tool reads it.
 */
class AttemptContext implements ToolExecuteContext {
  readonly call: ToolCall
  readonly idempotencyKey: string | undefined
  readonly attempt: number
  readonly log: Logger
  readonly #own: SignalLink

  constructor(ctx: CallContext, own: SignalLink) {
    this.call = ctx.call
    this.idempotencyKey = ctx.idempotencyKey
    this.attempt = ctx.attempt
    this.log = ctx.log
    this.#own = own
  }

  get signal(): AbortSignal {
    return this.#own.signal
  }
}

const isPromise = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | null)?.then === 'function'

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
 * signal aborts (a link a layer handed inward is left to that layer to race), and a result that
 * arrives after that is dropped, so an abandoned attempt can never change state. The tool runs at most once per attempt: only retry, by bumping `ctx.attempt`, may
 * run it again.
 */
export function createTerminal() {
  return async function terminal(ctx: CallContext): Promise<void> {
    const tool = ctx.tool
    // The call's one parse answers an unknown tool too (`unknown_tool`, with the names it could have meant).
    if (tool === undefined) throw (ctx.parsedArgs() as { readonly error: unknown }).error
    // This attempt's signal as the layers left it: a deadline's link is followed, not made real.
    const current = ctx.signalSource()
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
    const own = new SignalLink(current)
    const context = new AttemptContext(ctx, own)
    let value: unknown
    try {
      value = tool.execute(args, context)
      // A sync tool's answer is kept at once; an async one is waited for until the attempt's signal aborts. A link a
      // layer handed inward (a deadline) is that layer's to race: it stops waiting itself and reports a late result.
      if (isPromise(value))
        value = await (current instanceof SignalLink && current !== ctx.callSignal ? value : untilAborted(value, current))
    } catch (err) {
      noteDroppedRetryAfter(ctx, err)
      throw err
    } finally {
      own.abort(SETTLED)
    }
    // A result that arrives after the attempt was stopped is dropped.
    if (current.aborted) throw abortReason(current)
    ctx.result = { value }
  }
}
