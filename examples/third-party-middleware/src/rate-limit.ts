import { abortReason, type Middleware, type Next, parseOptions, type ToolContext, ToolError } from '@shallot/core'
import { z } from 'zod'
import { type Bucket, takeToken } from './token-bucket.js'

/** Options of {@link rateLimit}. */
export const rateLimitOptionsSchema = z
  .object({
    /** Calls per second each tool may make, on average. */
    rps: z.number().positive().max(10_000),
    /** Calls a tool may make at once after a quiet spell. Default: `rps` rounded up. */
    burst: z.number().int().min(1).max(100_000).optional(),
  })
  .strict()

export type RateLimitOptions = z.input<typeof rateLimitOptionsSchema>

/**
 * A token bucket per tool: a call over the limit is refused before it runs, with a soft
 * `rate_limited` error that carries `retryAfterMs` and is safe to repeat (nothing reached the
 * world), so `retry()` outside waits and repeats it and the model reads it if retries run out.
 * Refusals are emitted as `rate_limit.refused`. Place it inside `retry()` so each attempt takes a token.
 *
 * @example
 * createStack({ tools, middleware: [retry(), rateLimit({ rps: 5, burst: 2 }), timeout({ ms: 5000 })] })
 */
export function rateLimit(options: RateLimitOptions): Middleware {
  const { rps, burst = Math.ceil(rps) } = parseOptions('rateLimit()', rateLimitOptionsSchema, options)
  const buckets = new Map<string, Bucket>()

  return async function rateLimit(ctx: ToolContext, next: Next): Promise<void> {
    if (ctx.signal.aborted) throw abortReason(ctx.signal)
    const tool = ctx.call.name
    const take = takeToken(buckets.get(tool), ctx.clock.now(), rps, burst)
    buckets.set(tool, take.bucket)
    if (!take.allowed) {
      ctx.emit('rate_limit.refused', { retryAfterMs: take.retryAfterMs, rps })
      throw new ToolError('rate_limited', `Tool "${tool}" is limited to ${rps} calls per second; try again in ${take.retryAfterMs} ms`, {
        category: 'transient',
        retryable: true,
        safeToRepeat: true,
        retryAfterMs: take.retryAfterMs,
        hint: 'wait, or batch several requests into one call',
      })
    }
    await next()
  }
}
