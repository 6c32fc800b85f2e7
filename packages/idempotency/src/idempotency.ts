import type { Middleware, Next, ToolContext, ToolEffect } from '@shallot/core'
import { callNext } from '@shallot/core/kit'
import { type Guarded, idempotencyLayer } from './guarded-call.js'
import type { IdempotencyOptions } from './idempotency-options.js'
import { identify } from './identify-call.js'
import { lead, waitThenLead } from './lead-call.js'

declare module '@shallot/core' {
  interface ToolContext {
    /**
     * Set by `idempotency()`: the call's key, stable across retries and resumes. The stack forwards
     * it to the tool's `execute` (`idempotencyKey`), which may pass it upstream.
     */
    idempotencyKey?: string
  }
  interface ToolExecuteContext {
    /**
     * Set by `idempotency()` when it asks a tool's `reconcile` after the call's own attempt left its
     * outcome unknown: the wall-clock time (`Date.now()`, ms) just before that call's first attempt
     * was sent, so a reconciler can search the service for a write with these arguments made since
     * then. Absent in `execute`, and when a later call asks about an earlier call's attempt (a resume,
     * another process): then nothing here says when it was sent.
     */
    readonly sentAt?: number
  }
}

/**
 * No side effect twice. Gives every `write` and `idempotent` call one key, stable across retries
 * and resumes (`ctx.idempotencyKey`, forwarded to the tool); replays a stored success instead of
 * running the tool again (`replayed: true`); makes a duplicate wait for the identical call in
 * flight; refuses an identical call whose first attempt may have reached the world
 * (`outcome_unknown`) and an explicit key reused with other arguments (`idempotency_mismatch`).
 * Sits outside circuit breaker and retry, so it sees each logical call's final outcome.
 *
 * @example
 * const stack = createStack({
 *   tools: [chargeCard],
 *   middleware: [panicCatcher(), stuckLoop(), idempotency({ store: sqliteStore({ path: 'agent.db' }), scope: 'tenant-a' }), retry(), timeout()],
 * })
 */
export function idempotency(options?: IdempotencyOptions): Middleware {
  const layer = idempotencyLayer(options)
  const guardedEffects = new Set<ToolEffect>(layer.opts.effects)
  const { calls } = layer

  // A call runs next() at most once, after its claim; a replayed or refused call never calls it. An unguarded call
  // (a read) is handed straight to next().
  return function idempotency(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || !guardedEffects.has(tool.effect)) return callNext(next)
    let call: Guarded | undefined
    try {
      call = identify(layer, ctx, tool)
    } catch (err) {
      return Promise.reject(err)
    }
    if (call === undefined) return callNext(next)
    return calls.get(call.storeKey) === undefined ? lead(layer, ctx, next, call) : waitThenLead(layer, ctx, next, call)
  }
}
