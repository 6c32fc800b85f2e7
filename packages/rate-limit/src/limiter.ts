import { type RateLimitData, ruleOf } from './rate-limit-options.js'
import { memoryRateLimitStore, type RateLimitStore } from './rate-limit-store.js'

/**
 * A key function's answer, or the TypeError that names the mistake (never awaited: a key is synchronous).
 *
 * @example
 * keyFrom('rateLimit()', (ctx) => ctx.run.id, ctx) // 'run-1'
 */
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

/** The parts of one side's limit: the parsed data, the store, the rule. */
export interface Limiter {
  readonly options: RateLimitData
  readonly store: RateLimitStore
  readonly rule: ReturnType<typeof ruleOf>
}

/**
 * The limiter of parsed options: the store given, or a fresh in-process one.
 *
 * @example
 * limiterOf(rateLimitOptionsSchema.parse({ limit: 5 })).rule.burst // 5
 */
export function limiterOf(options: RateLimitData & { store?: RateLimitStore | undefined }): Limiter {
  return { options, store: options.store ?? memoryRateLimitStore(), rule: ruleOf(options) }
}
