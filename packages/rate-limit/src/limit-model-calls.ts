import { abortReason, type ModelContext, type ModelMiddleware, type ModelNext } from '@shallot/core'
import { type Caller, decide, giveBack, STORE_FAILED_OPEN, waitTurn } from './admission.js'
import type { RateDecision } from './gcra.js'
import { keyFrom, type Limiter } from './limiter.js'
import { holdBack, learn, type Pushback } from './pushback.js'
import { rateLimitedError } from './rate-limited-error.js'

/**
 * The bucket of a model by default: `model:` keeps it apart from a tool of the same name in a shared
 * store, the provider apart from another provider's model of that name.
 *
 * @example
 * modelRateKey({ name: 'gpt-4o', provider: 'openai' }) // 'model:openai:gpt-4o'
 */
export function modelRateKey(model: { readonly name: string; readonly provider?: string | undefined }): string {
  return model.provider === undefined ? `model:${model.name}` : `model:${model.provider}:${model.name}`
}

/**
 * The model side of {@link rateLimit}: a request over the limit waits for its turn within `maxWaitMs`,
 * abortably; otherwise it is refused before the provider is asked with the `rate_limited` ToolError
 * (`retryAfterMs`, not retryable, safe to repeat), as an open circuit refuses. Place it inside fallback
 * and outside the breaker and retry: one logical model call takes one place, and the refusal never
 * counts against the model's circuit.
 *
 * With `pushback`, the provider's own word is shared too: a send that fails with a `Retry-After` holds the
 * key in the store for that long, and a call finds its key held before it takes a place (waits out the
 * rest within `maxWaitMs`, jittered, or is refused with its `retryAfterMs`).
 */
export function limitModelCalls(limiter: Limiter, keyOf: (ctx: ModelContext) => string | undefined, pushback?: Pushback): ModelMiddleware {
  const { options } = limiter

  function admitted(ctx: ModelContext, caller: Caller, key: string, decision: RateDecision, next: ModelNext): Promise<void> {
    if (decision === STORE_FAILED_OPEN) return next()
    const model = ctx.model.name
    if (!decision.admitted) {
      const retryAfterMs = Math.ceil(decision.waitMs)
      ctx.log.warn({ model, key, retryAfterMs }, 'model call refused by its rate limit')
      const { limit, perMs, maxWaitMs } = options
      return Promise.reject(rateLimitedError({ subject: `model '${model}'`, key, limit, perMs, maxWaitMs, retryAfterMs }))
    }
    if (decision.waitMs <= 0) return next()
    const waitMs = Math.ceil(decision.waitMs)
    ctx.log.info({ model, key, waitMs }, 'model call waits for its rate limit')
    const cancelled = () => giveBack(limiter, caller, key, decision.reservation)
    return waitTurn(caller, waitMs, cancelled).then(() => (ctx.signal.aborted ? Promise.reject(abortReason(ctx.signal)) : next()))
  }

  return async function rateLimitOfModels(ctx: ModelContext, next: ModelNext): Promise<void> {
    const key = keyFrom('rateLimit()', keyOf, ctx)
    if (key === undefined) return next()
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    // No step left: the terminal ends the run with its budget error, without a wait for it.
    if (ctx.run.budget.remaining <= 0) return next()
    const caller: Caller = { clock: ctx.clock, log: ctx.log, signal: ctx.signal }
    if (pushback === undefined) return admitted(ctx, caller, key, await decide(limiter, caller, key), next)
    await holdBack(pushback, ctx, caller, key)
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    // A send the provider pushes back on holds the key for every worker before its failure goes on.
    const send = () =>
      next().then(undefined, async (err: unknown) => {
        await learn(pushback, caller, key, err)
        throw err
      })
    return admitted(ctx, caller, key, await decide(limiter, caller, key), send)
  }
}
