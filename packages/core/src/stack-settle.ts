import type { CallContext } from './call-context.js'
import { SETTLED, SignalLink } from './cancellation.js'
import { escalation, toHard } from './channel.js'
import { MiddlewareUsageError } from './compose.js'
import { MAX_HINT_LENGTH, MAX_MESSAGE_LENGTH, type ToolError, type ToolErrorJSON } from './errors.js'
import { silentLogger } from './logger.js'
import { renderValue } from './render.js'
import type { StackCore } from './stack-call.js'
import type { Sanitizer } from './text/sanitize.js'
import type { ToolResult } from './types.js'

/** The details a renderer may show: primitives only, strings sanitized. */
function renderableDetails(details: Record<string, unknown> | undefined, text: Sanitizer): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  if (details === undefined) return out
  try {
    for (const [key, value] of Object.entries(details)) {
      if (typeof value === 'string') out[key] = text.text(value, MAX_MESSAGE_LENGTH)
      else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') out[key] = value
    }
  } catch {
    // A throwing getter in a layer's details must not turn a soft error into a crash; the renderer gets what was read.
  }
  return out
}

function softResult(core: StackCore, ctx: CallContext, error: ToolError, started: number): ToolResult {
  // The one place soft-error text is made safe, whichever layer wrote it: the model reads
  // `content`, and hosts show `error` too.
  const text = core.text
  const json: ToolErrorJSON = error.toJSON()
  json.message = text.text(json.message, MAX_MESSAGE_LENGTH)
  if (json.hint !== undefined) json.hint = text.text(json.hint, MAX_HINT_LENGTH)
  return {
    callId: ctx.call.id,
    name: ctx.call.name,
    ok: false,
    content: text.output(core.render(json, ctx.call, renderableDetails(error.details, text)), core.limits.maxOutputChars, false),
    error: json,
    attempts: ctx.attempt,
    durationMs: core.clock.now() - started,
    replayed: false,
    trace: ctx.trace,
  }
}

function succeeded(core: StackCore, ctx: CallContext): ToolResult {
  const output = ctx.result
  if (output === undefined) {
    throw new MiddlewareUsageError('the stack settled without a result: a middleware resolved without calling next() or setting ctx.result')
  }
  return {
    callId: ctx.call.id,
    name: ctx.call.name,
    ok: true,
    content: core.text.output(renderValue(output.value), core.limits.maxOutputChars, core.redactOutput),
    value: output.value,
    attempts: ctx.attempt,
    durationMs: core.clock.now() - ctx.startedAt,
    replayed: output.replayed === true,
    trace: ctx.trace,
  }
}

/** A soft error's result, or the hard error (thrown) that ends the run. */
function failed(core: StackCore, ctx: CallContext, err: unknown): ToolResult {
  const { call, log, startedAt: started, watched } = ctx
  const { clock, text } = core
  const signal = ctx.callSignal
  const hard = toHard(err, signal, call.name, (message) => text.text(message, MAX_MESSAGE_LENGTH))
  if (hard !== undefined) {
    if (log !== silentLogger)
      log.warn(
        { attempts: ctx.attempt, durationMs: clock.now() - started, outcome: 'hard_error', kind: hard.kind },
        'tool call ended the run',
      )
    if (watched) core.events.finished(ctx, 'hard_error', clock.now() - started, false, { kind: hard.kind, message: hard.message })
    throw hard
  }
  const result = softResult(core, ctx, err as ToolError, started)
  const escalated = escalation(result.error as ToolErrorJSON, call.name, core.policy, err)
  if (escalated !== undefined) {
    if (log !== silentLogger)
      log.warn(
        { attempts: ctx.attempt, durationMs: result.durationMs, outcome: 'hard_error', kind: escalated.kind, code: result.error?.code },
        'tool call ended the run',
      )
    if (watched) core.events.finished(ctx, 'hard_error', result.durationMs, false, { ...result.error, kind: escalated.kind })
    throw escalated
  }
  return result
}

function reported(core: StackCore, ctx: CallContext, result: ToolResult): void {
  if (ctx.log !== silentLogger) {
    ctx.log.info(
      {
        attempts: result.attempts,
        durationMs: result.durationMs,
        outcome: result.ok ? 'ok' : 'soft_error',
        replayed: result.replayed,
        code: result.error?.code,
        category: result.error?.category,
        message: result.error?.message,
      },
      'tool call',
    )
  }
  if (ctx.watched) core.events.finished(ctx, result.ok ? 'ok' : 'soft_error', result.durationMs, result.replayed, result.error)
}

/** The call's result once its onion settled, or the hard error that ends the run; the call is closed either way. */
export function settleCall(core: StackCore, ctx: CallContext, ok: boolean, err: unknown): ToolResult {
  let result: ToolResult
  try {
    if (!ok) result = failed(core, ctx, err)
    else {
      try {
        result = succeeded(core, ctx)
      } catch (odd) {
        result = failed(core, ctx, odd)
      }
    }
  } finally {
    ctx.settled = true
    // The link of the run's and the caller's signals is the call's own: what a layer left running on it stops.
    if (ctx.callSignal instanceof SignalLink) ctx.callSignal.abort(SETTLED)
  }
  reported(core, ctx, result)
  return result
}
