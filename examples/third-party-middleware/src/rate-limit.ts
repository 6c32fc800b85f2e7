import {
  abortReason,
  type Clock,
  type Layer,
  type Middleware,
  type ModelContext,
  type ModelMiddleware,
  type ModelNext,
  type Next,
  parseOptions,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { z } from 'zod'
import { type Bucket, takeToken } from './token-bucket.js'

/** Options of {@link rateLimit}. */
export const rateLimitOptionsSchema = z
  .object({
    /** Calls per second each tool (or each model) may make, on average. */
    rps: z.number().positive().max(10_000),
    /** Calls a tool (or a model) may make at once after a quiet spell. Default: `rps` rounded up. */
    burst: z.number().int().min(1).max(100_000).optional(),
  })
  .strict()

export type RateLimitOptions = z.input<typeof rateLimitOptionsSchema>

/** What {@link rateLimit} returns: one layer, with a side for tool calls and a side for model calls. */
export interface RateLimitLayer extends Layer {
  readonly name: '@acme/shallot-rate-limit'
  /** Listed in `middleware`: a bucket per tool. */
  readonly wrapToolCall: Middleware
  /** Listed in `modelMiddleware`: a bucket per model. */
  readonly wrapModelCall: ModelMiddleware
}

/**
 * A token bucket per tool and per model: a call over the limit is refused before it runs, with a
 * `rate_limited` error that carries `retryAfterMs` and is safe to repeat (nothing reached the world
 * or the provider), so `retry()` outside waits and repeats it; a tool's refusal is soft, and the model
 * reads it if retries run out. Tool refusals are emitted as `rate_limit.refused`. Place it inside
 * `retry()` in each list so each attempt takes a token.
 *
 * @example
 * const limit = rateLimit({ rps: 5, burst: 2 })
 * createAgent({ model, tools, middleware: [retry(), limit, timeout({ ms: 5000 })], modelMiddleware: [retry(), limit] })
 */
export function rateLimit(options: RateLimitOptions): RateLimitLayer {
  const { rps, burst = Math.ceil(rps) } = parseOptions('rateLimit()', rateLimitOptionsSchema, options)
  const buckets = new Map<string, Bucket>()

  /** Takes a token from `key`'s bucket; undefined when admitted, else the wait until the next token. */
  function refusal(key: string, clock: Clock): number | undefined {
    const take = takeToken(buckets.get(key), clock.now(), rps, burst)
    buckets.set(key, take.bucket)
    return take.allowed ? undefined : take.retryAfterMs
  }

  const limited = (what: string, retryAfterMs: number) =>
    new ToolError('rate_limited', `${what} is limited to ${rps} calls per second; try again in ${retryAfterMs} ms`, {
      category: 'transient',
      retryable: true,
      safeToRepeat: true,
      retryAfterMs,
      hint: 'wait, or batch several requests into one call',
    })

  return Object.freeze({
    name: '@acme/shallot-rate-limit',
    wrapToolCall: async function rateLimit(ctx: ToolContext, next: Next): Promise<void> {
      if (ctx.signal.aborted) throw abortReason(ctx.signal)
      const retryAfterMs = refusal(`tool:${ctx.call.name}`, ctx.clock)
      if (retryAfterMs !== undefined) {
        ctx.emit('rate_limit.refused', { retryAfterMs, rps })
        throw limited(`Tool "${ctx.call.name}"`, retryAfterMs)
      }
      await next()
    },
    wrapModelCall: async function rateLimitModel(ctx: ModelContext, next: ModelNext): Promise<void> {
      if (ctx.signal.aborted) throw abortReason(ctx.signal)
      const retryAfterMs = refusal(`model:${ctx.model.name}`, ctx.clock)
      if (retryAfterMs !== undefined) throw limited(`Model "${ctx.model.name}"`, retryAfterMs)
      await next()
    },
  })
}
