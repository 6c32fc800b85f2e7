import { abortReason, type Middleware, type Next, type ToolContext } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { type Caller, decide, giveBack, STORE_FAILED_OPEN, waitTurn } from './admission.js'
import type { RateDecision } from './gcra.js'
import { keyFunction, type RateLimitData, rateLimitDataShape, ruleOf, storeSchema } from './rate-limit-options.js'
import { memoryRateLimitStore, type RateLimitStore } from './rate-limit-store.js'
import { rateLimitedError } from './rate-limited-error.js'

/**
 * Options of {@link rateLimit}: the file's options, a `key` function and a `store`.
 *
 * @example
 * rateLimitOptionsSchema.parse({ limit: 5 }).maxWaitMs // 1000
 */
export const rateLimitOptionsSchema = z.strictObject({
  ...rateLimitDataShape,
  /**
   * Which bucket a call takes from (a host, a tenant), synchronously. Default: `tool:<name>` (or `tools`
   * with `per: 'all'`). `undefined` lets the call through unlimited.
   */
  key: keyFunction<ToolContext>(),
  /** Where the buckets live. Default: this layer's own `memoryRateLimitStore()`; a shared store limits a fleet. */
  store: storeSchema,
})

/** What {@link rateLimit} accepts. */
export type RateLimitOptions = z.input<typeof rateLimitOptionsSchema>

const parse = optionsParser('rateLimit()', rateLimitOptionsSchema)

/** A key function's answer, or the TypeError that names the mistake (never awaited: a key is synchronous). */
export function keyFrom<Ctx>(owner: string, key: (ctx: Ctx) => string | undefined, ctx: Ctx): string | undefined {
  let value: unknown
  try {
    value = key(ctx)
  } catch (err) {
    throw new TypeError(`${owner}: key(ctx) threw: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (value === undefined || typeof value === 'string') return value
  if (typeof (value as { then?: unknown })?.then === 'function') {
    Promise.resolve(value).then(undefined, () => {}) // never awaited: its failure must not go unhandled
    throw new TypeError(`${owner}: key(ctx) returned a promise; it must return a string or undefined synchronously`)
  }
  throw new TypeError(`${owner}: key(ctx) must return a string or undefined, got ${value === null ? 'null' : typeof value}`)
}

/** The parts of a limit both layers share: the parsed data, the store, the rule. */
export interface Limiter {
  readonly options: RateLimitData
  readonly store: RateLimitStore
  readonly rule: ReturnType<typeof ruleOf>
}

/** The limiter of parsed options: the store given, or a fresh in-process one. */
export function limiterOf(options: RateLimitData & { store?: RateLimitStore | undefined }): Limiter {
  return { options, store: options.store ?? memoryRateLimitStore(), rule: ruleOf(options) }
}

/**
 * Limits how often calls run, per key: a GCRA (a token bucket of `burst` tokens refilled at
 * `limit` per `perMs`) in this process, or fleet-wide through a shared `store`. A call over the limit
 * waits for its turn when that comes within `maxWaitMs` (abortably: the run's cancellation or an outer
 * deadline ends the wait at once); otherwise it is refused before it runs with a soft `rate_limited`
 * whose `retryAfterMs` says when a call would be admitted. A call that finds a free place costs a map
 * lookup and no timer.
 *
 * @example
 * const stack = createStack({
 *   tools: [search],
 *   middleware: [rateLimit({ limit: 10, perMs: 60_000, key: (ctx) => `tenant:${tenantOf(ctx.run.id)}` }), retry()],
 * })
 */
export function rateLimit(options?: RateLimitOptions): Middleware {
  const parsed = parse(options)
  const limiter = limiterOf(parsed)
  const keyOf = parsed.key
  const all = parsed.per === 'all'
  return limitToolCalls(limiter, keyOf === undefined ? (ctx) => (all ? 'tools' : `tool:${ctx.call.name}`) : keyOf)
}

/** The tool layer of a limiter, with the key function that names a call's bucket. */
export function limitToolCalls(limiter: Limiter, keyOf: (ctx: ToolContext) => string | undefined): Middleware {
  const { options, store, rule } = limiter

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
    const cancelled = () => giveBack(caller, store, key, rule, decision.reservation, options.storeTimeoutMs)
    return waitTurn(caller, waitMs, cancelled).then(() => (caller.signal.aborted ? Promise.reject(abortReason(caller.signal)) : next()))
  }

  return function rateLimit(ctx: ToolContext, next: Next): Promise<void> {
    if (ctx.tool === undefined) return next()
    const key = keyFrom('rateLimit()', keyOf, ctx)
    if (key === undefined) return next()
    const signal = ctx.currentSignal()
    if (signal.aborted) return Promise.reject(abortReason(signal))
    // No step left: the terminal ends the run with its budget error; waiting a turn for that, or taking one, is waste.
    if (ctx.run.budget.remaining <= 0) return next()
    const caller: Caller = { clock: ctx.clock, log: ctx.log, signal }
    let decision: RateDecision | Promise<RateDecision>
    try {
      decision = decide(caller, store, key, rule, options.onStoreFailure, options.storeTimeoutMs)
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
