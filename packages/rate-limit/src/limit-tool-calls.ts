import { abortReason, type Middleware, type Next, type ToolContext } from '@shallot/core'
import { type Caller, decide, giveBack, STORE_FAILED_OPEN, waitTurn } from './admission.js'
import type { RateDecision } from './gcra.js'
import { keyFrom, type Limiter } from './limiter.js'
import { rateLimitedError } from './rate-limited-error.js'

/** The tool side of {@link rateLimit}: a limiter, with the key function that names a call's bucket. */
export function limitToolCalls(limiter: Limiter, keyOf: (ctx: ToolContext) => string | undefined): Middleware {
  const { options } = limiter

  function admitted(ctx: ToolContext, caller: Caller, key: string, decision: RateDecision, next: Next): Promise<void> {
    if (decision === STORE_FAILED_OPEN) {
      ctx.emit('rate-limit.store_failed', { key, onStoreFailure: 'open' })
      return next()
    }
    if (!decision.admitted) {
      ctx.emit('rate-limit.refused', { key, retryAfterMs: Math.ceil(decision.waitMs) })
      const { limit, perMs, maxWaitMs } = options
      const subject = `tool '${ctx.call.name}'`
      return Promise.reject(rateLimitedError({ subject, key, limit, perMs, maxWaitMs, retryAfterMs: decision.waitMs }))
    }
    if (decision.waitMs <= 0) return next()
    const waitMs = Math.ceil(decision.waitMs)
    ctx.emit('rate-limit.waiting', { key, waitMs })
    const cancelled = () => giveBack(limiter, caller, key, decision.reservation)
    return waitTurn(caller, waitMs, cancelled).then(() => (caller.signal.aborted ? Promise.reject(abortReason(caller.signal)) : next()))
  }

  return function rateLimit(ctx: ToolContext, next: Next): Promise<void> {
    if (ctx.tool === undefined) return next()
    const key = keyFrom('rateLimit()', keyOf, ctx)
    if (key === undefined) return next()
    const signal = ctx.signal
    if (signal.aborted) return Promise.reject(abortReason(signal))
    // No step left: the terminal ends the run with its budget error; waiting a turn for that, or taking one, is waste.
    if (ctx.run.budget.remaining <= 0) return next()
    const caller: Caller = { clock: ctx.clock, log: ctx.log, signal }
    let decision: RateDecision | Promise<RateDecision>
    try {
      decision = decide(limiter, caller, key)
    } catch (err) {
      if (!signal.aborted) ctx.emit('rate-limit.store_failed', { key, onStoreFailure: 'closed' })
      return Promise.reject(err)
    }
    if (!(decision instanceof Promise)) return admitted(ctx, caller, key, decision, next)
    return decision.then(
      (d) => admitted(ctx, caller, key, d, next),
      (err: unknown) => {
        if (!signal.aborted) ctx.emit('rate-limit.store_failed', { key, onStoreFailure: 'closed' })
        throw err
      },
    )
  }
}
