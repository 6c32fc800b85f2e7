import {
  abortReason,
  type Middleware,
  MiddlewareUsageError,
  type Next,
  parseOptions,
  type ToolContext,
  type ToolOutput,
} from '@shallot/core'
import { callNext, type Flight, SingleFlight, scopeFrom } from '@shallot/core/kit'
import { z } from 'zod'

/** Names the scope of a call (its tenant, say): only calls of one scope share an execution. */
export type CoalesceScopeFunction = (ctx: ToolContext) => string

/** The options a config file can hold too: everything but `scope`. */
export const coalesceDataShape = {
  /**
   * Also coalesce `idempotent` tools. Default false: the shared execution carries the first caller's
   * call id and idempotency key, so the others' keys never reach the upstream: an upstream that dedupes by key
   * would see one key where its callers sent several.
   */
  idempotent: z.boolean().default(false),
}

/**
 * Options of {@link coalesce}.
 *
 * @example
 * coalesceOptionsSchema.parse({}).idempotent // false
 */
export const coalesceOptionsSchema = z.strictObject({
  ...coalesceDataShape,
  /**
   * The scope of a call, e.g. its tenant: only calls of the same scope (and stack) share an
   * execution. Code, so not in a config file. Default: every run of the stack shares.
   */
  scope: z
    .custom<CoalesceScopeFunction>((v) => typeof v === 'function', {
      message: 'must be a function (ctx) => string, e.g. (ctx) => tenantOf(ctx.run)',
    })
    .optional(),
})

/** What {@link coalesce} accepts. */
export type CoalesceOptions = z.input<typeof coalesceOptionsSchema>

/**
 * Emits on behalf of a caller from a callback (an abort, another caller's settle): a throwing logger
 * or listener must not strand the caller or the others.
 */
function tell(ctx: ToolContext, type: string, fields: Record<string, unknown>): void {
  try {
    ctx.emit(type, fields)
  } catch (err) {
    try {
      ctx.log.warn({ err, type }, 'coalesce: an event listener threw')
    } catch {
      // Nowhere left to report to.
    }
  }
}

/** Each caller but the first gets its own copy, so no caller can change what another reads; a value that cannot be copied is shared. */
function copyOf(output: ToolOutput): ToolOutput {
  const value = output.value
  if (value === null || typeof value !== 'object') return { ...output }
  try {
    return { ...output, value: structuredClone(value) }
  } catch {
    return { ...output }
  }
}

/**
 * Identical concurrent calls of a `read` tool (same tool, same parsed arguments as canonical JSON,
 * same stack and scope) share one execution, and every caller gets its result. The first caller's
 * inner layers and tool run on a signal of their own: a caller that cancels or times out leaves at
 * once with its own reason while the others keep waiting, and the execution is aborted only when
 * every caller has gone. Only running calls are shared; nothing is kept once the execution settled,
 * so a failure reaches each caller's own retry, which repeats it on its own (place coalesce inside
 * retry). Writes never coalesce; `idempotent` tools only with `idempotent: true`.
 *
 * @example
 * const stack = createStack({ tools, middleware: [retry(), coalesce({ scope: (ctx) => tenantOf(ctx.run) }), timeout()] })
 */
export function coalesce(options?: CoalesceOptions): Middleware {
  const { idempotent, scope } = parseOptions('coalesce()', coalesceOptionsSchema, options)
  const byStack = new WeakMap<object, SingleFlight<ToolOutput>>()

  function keyOf(ctx: ToolContext): string | undefined {
    if (scope === undefined) return ctx.fingerprint
    const asked = scopeFrom(scope, ctx)
    if ('scope' in asked) return `${asked.scope} ${ctx.fingerprint}`
    ctx.emit('coalesce.scope_failed', { problem: asked.problem })
    ctx.log.error({ tool: ctx.call.name, problem: asked.problem }, 'coalesce: scope gave no scope; this call runs on its own')
    return undefined
  }

  /**
   * Starts the shared execution: this caller's inner layers and tool, on the flight's own signal,
   * which aborts only once every caller has left: one caller who gives up does not cancel the
   * others' answer. Each caller races its own signal, so it leaves the moment it is cancelled.
   */
  function lead(ctx: ToolContext, next: Next, flights: SingleFlight<ToolOutput>, key: string): Flight<ToolOutput> {
    const flight = flights.lead(key)
    ctx.signal = flight.signal
    callNext(next).then(
      () => {
        const output = ctx.result
        if (output === undefined) flight.fail(new MiddlewareUsageError('the layers inside coalesce() settled without a result'))
        else flight.land(output)
      },
      (err: unknown) => flight.fail(err),
    )
    return flight
  }

  return async function coalesce(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || !(tool.effect === 'read' || (idempotent && tool.effect === 'idempotent'))) return next()
    const stack = ctx.stackKey
    // A context not made by a stack has no stack to be kept apart from: it runs on its own.
    if (typeof stack !== 'object' || stack === null) return next()
    const entry = ctx.signal
    if (entry.aborted) throw abortReason(entry)
    try {
      void ctx.args
    } catch {
      // Arguments that do not parse are the terminal's to answer, call by call.
      return next()
    }
    const key = keyOf(ctx)
    if (key === undefined) return next()
    let flights = byStack.get(stack)
    if (flights === undefined) {
      flights = new SingleFlight()
      byStack.set(stack, flights)
    }
    let flight = flights.get(key)
    const first = flight === undefined
    if (flight === undefined) flight = lead(ctx, next, flights, key)
    else ctx.emit('coalesce.joined', { callers: flight.waiting + 1 })
    const shared = flight
    let output: ToolOutput
    try {
      // A caller whose signal aborts leaves at once with its own reason; the last one to leave stops the execution.
      output = await shared.wait(entry, (left) => {
        if (left === 0) shared.abandon(abortReason(entry))
        tell(ctx, 'coalesce.left', { callers: left, stopped: left === 0 })
      })
    } finally {
      if (first) ctx.signal = entry
    }
    ctx.result = first ? output : copyOf(output)
  }
}
