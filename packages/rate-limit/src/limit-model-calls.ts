import { abortReason, type ModelContext, type ModelMiddleware, type ModelNext } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { type Caller, decide, giveBack, STORE_FAILED_OPEN, waitTurn } from './admission.js'
import type { RateDecision } from './gcra.js'
import { keyFrom, type Limiter, limiterOf } from './rate-limit.js'
import { keyFunction, rateLimitDataShape, storeSchema } from './rate-limit-options.js'
import { rateLimitedError } from './rate-limited-error.js'

/**
 * Options of {@link rateLimitModel}: the tool layer's, with `key` given the model call's context.
 *
 * @example
 * rateLimitModelOptionsSchema.parse({ limit: 50, perMs: 60_000 }).per // 'name'
 */
export const rateLimitModelOptionsSchema = z.strictObject({
  ...rateLimitDataShape,
  /** Which bucket a model call takes from. Default `model:<provider>:<name>` (or `models` with `per: 'all'`). `undefined`: unlimited. */
  key: keyFunction<ModelContext>(),
  store: storeSchema,
})

/** What {@link rateLimitModel} accepts. */
export type RateLimitModelOptions = z.input<typeof rateLimitModelOptionsSchema>

const parse = optionsParser('rateLimitModel()', rateLimitModelOptionsSchema)

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
 * A rate limit for model calls, from the same options as {@link rateLimit}: one bucket per model (or
 * per `key`), in this process or fleet-wide through a shared `store`. A request over the limit waits
 * for its turn when that comes within `maxWaitMs`, abortably; otherwise it is refused before the
 * provider is asked with the `rate_limited` ToolError (`retryAfterMs`, not retryable, safe to repeat),
 * as an open circuit refuses: a fallback layer outside moves on to the next model, and with nothing
 * outside the run ends as `model_failed` naming `rate_limited`. Place it inside fallback and outside
 * the breaker and retry: one logical model call takes one place, and the refusal never counts against
 * the model's circuit.
 *
 * @example
 * createAgent({ model, tools, modelMiddleware: [rateLimitModel({ limit: 50, perMs: 60_000, maxWaitMs: 2_000 }), retryModel()] })
 */
export function rateLimitModel(options?: RateLimitModelOptions): ModelMiddleware {
  const parsed = parse(options)
  const keyOf = parsed.key
  const all = parsed.per === 'all'
  return limitModelCalls(limiterOf(parsed), keyOf === undefined ? (ctx) => (all ? 'models' : modelRateKey(ctx.model)) : keyOf)
}

/** The model layer of a limiter, with the key function that names a call's bucket. */
export function limitModelCalls(limiter: Limiter, keyOf: (ctx: ModelContext) => string | undefined): ModelMiddleware {
  const { options, store, rule } = limiter

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
    const cancelled = () => giveBack(caller, store, key, rule, decision.reservation, options.storeTimeoutMs)
    return waitTurn(caller, waitMs, cancelled).then(() => (ctx.signal.aborted ? Promise.reject(abortReason(ctx.signal)) : next()))
  }

  return async function rateLimitModel(ctx: ModelContext, next: ModelNext): Promise<void> {
    const key = keyFrom('rateLimitModel()', keyOf, ctx)
    if (key === undefined) return next()
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    // No step left: the terminal ends the run with its budget error, without a wait for it.
    if (ctx.run.budget.remaining <= 0) return next()
    const caller: Caller = { clock: ctx.clock, log: ctx.log, signal: ctx.signal }
    const decision = await decide(caller, store, key, rule, options.onStoreFailure, options.storeTimeoutMs)
    return admitted(ctx, caller, key, decision, next)
  }
}
