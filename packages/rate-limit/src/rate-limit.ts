import type { Layer, Middleware, ModelContext, ModelMiddleware, ToolContext } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { limitModelCalls, modelRateKey } from './limit-model-calls.js'
import { limitToolCalls } from './limit-tool-calls.js'
import { limiterOf } from './limiter.js'
import type { Pushback } from './pushback.js'
import { memoryPushbackStore } from './pushback-store.js'
import { keyFunction, pushbackSchema, rateLimitDataShape, storeSchema } from './rate-limit-options.js'

/**
 * Options of {@link rateLimit}, for its tool side and its model side alike: the file's options, a
 * `key` function and a `store`.
 *
 * @example
 * rateLimitOptionsSchema.parse({ limit: 5 }).maxWaitMs // 1000
 */
export const rateLimitOptionsSchema = z.strictObject({
  ...rateLimitDataShape,
  /**
   * Which bucket a call takes from (a host, a tenant), synchronously. It receives the call's context: a
   * `ToolContext` around a tool call, a `ModelContext` around a model call (tell them apart with
   * `'call' in ctx`). Default: `tool:<name>` for a tool call, `model:<provider>:<name>` for a model call
   * (`tools` / `models` with `per: 'all'`). `undefined` lets the call through unlimited.
   */
  key: keyFunction<ToolContext | ModelContext>(),
  /**
   * Where the buckets live. Default: an in-process `memoryRateLimitStore()` for each side of this layer.
   * A shared store limits a fleet, and holds both sides' buckets: a key both sides return is one bucket.
   */
  store: storeSchema,
  /**
   * Where the model side shares a provider's pushback: a send that fails with a `Retry-After` (a 429, a 503)
   * holds its key that long, and every call of that key waits it out (within `maxWaitMs`, jittered) or is
   * refused with its `retryAfterMs` before it is sent. Default: a `memoryPushbackStore()` of this layer's
   * own (the runs of one process share it); a shared store (`redisStores().pushback`,
   * `postgresStores().pushback`, `sqlitePushbackStore`) shares it with a fleet; `false`: none.
   */
  pushback: pushbackSchema,
})

/** What {@link rateLimit} accepts. */
export type RateLimitOptions = z.input<typeof rateLimitOptionsSchema>

/** What {@link rateLimit} returns: one layer with a side for tool calls and a side for model calls. */
export interface RateLimitLayer extends Layer {
  readonly name: 'rate-limit'
  /** Around tool calls (`middleware`): refuses softly with `rate_limited` (events `rate-limit.*`). */
  readonly wrapToolCall: Middleware
  /** Around model calls (`modelMiddleware`): refuses with the `rate_limited` ToolError before the provider is asked. */
  readonly wrapModelCall: ModelMiddleware
}

const parse = optionsParser('rateLimit()', rateLimitOptionsSchema)

/**
 * Limits how often calls run, per key: a GCRA (a token bucket of `burst` tokens refilled at
 * `limit` per `perMs`) in this process, or fleet-wide through a shared `store`. A call over the limit
 * waits for its turn when that comes within `maxWaitMs` (abortably: the run's cancellation or an outer
 * deadline ends the wait at once); otherwise it is refused before it runs with a `rate_limited`
 * whose `retryAfterMs` says when a call would be admitted: soft for a tool call (the model reads it),
 * the run's `model_failed` for a model call unless a fallback layer outside moves on. A call that
 * finds a free place costs a map lookup and no timer. List it in `middleware` for tool calls, in
 * `modelMiddleware` for model calls, or in both: each list takes its own side, and without a shared
 * `store` each side keeps its own buckets.
 *
 * @example
 * const stack = createStack({
 *   tools: [search],
 *   middleware: [rateLimit({ limit: 10, perMs: 60_000, key: (ctx) => `tenant:${tenantOf(ctx.run.id)}` }), retry()],
 * })
 * createAgent({ model, tools, modelMiddleware: [rateLimit({ limit: 50, perMs: 60_000, maxWaitMs: 2_000 }), retry()] })
 */
export function rateLimit(options?: RateLimitOptions): RateLimitLayer {
  const parsed = parse(options)
  const all = parsed.per === 'all'
  const key = parsed.key
  const { maxWaitMs, onStoreFailure, storeTimeoutMs } = parsed
  const pushback: Pushback | undefined =
    parsed.pushback === false ? undefined : { store: parsed.pushback ?? memoryPushbackStore(), maxWaitMs, onStoreFailure, storeTimeoutMs }
  return Object.freeze({
    name: 'rate-limit',
    wrapToolCall: limitToolCalls(limiterOf(parsed), key ?? ((ctx) => (all ? 'tools' : `tool:${ctx.call.name}`))),
    wrapModelCall: limitModelCalls(limiterOf(parsed), key ?? ((ctx) => (all ? 'models' : modelRateKey(ctx.model))), pushback),
  })
}
