import type { ToolContext } from '@shallot/core'
import { type CachedResult, ResultCache } from './result-cache.js'

/** Computes the scope of a call's cached results (for example its tenant) from its context. */
export type CacheScopeFunction = (ctx: ToolContext) => string

const SCOPE = /^[\x21-\x7e]{1,128}$/

/**
 * Why a scope function's answer cannot be a scope, or `undefined`: 1 to 128 printable ASCII
 * characters without spaces, the same rule as idempotency's `scope`, so one tenant id fits both.
 */
function scopeProblem(scope: unknown): string | undefined {
  if (typeof scope === 'string' && SCOPE.test(scope)) return undefined
  const got = typeof scope === 'string' ? JSON.stringify(scope.slice(0, 40)) : typeof scope
  return `must be 1-128 printable ASCII characters without spaces, got ${got}`
}

function thrownText(err: unknown): string {
  try {
    return `threw: ${err instanceof Error ? String(err.message).slice(0, 200) : typeof err}`
  } catch {
    return 'threw a value that cannot be read'
  }
}

/**
 * The results one fallback layer remembers: a {@link ResultCache} per stack (`ctx.stackKey`), its
 * entries keyed by the call's scope (`cacheScope(ctx)`, when given) and identity (`ctx.fingerprint`).
 * So a layer given to two stacks, or serving two tenants, never answers one from the other's result.
 * A call whose scope cannot be told is neither stored nor served.
 *
 * @example
 * const cache = new CallCache(1000, 3_600_000, (ctx) => tenantOf(ctx.run))
 * const key = cache.keyOf(ctx) // undefined: no scope, no cache
 * if (key !== undefined) cache.store(ctx, key, value)
 */
export class CallCache {
  readonly #byStack = new WeakMap<object, ResultCache>()

  constructor(
    readonly maxEntries: number,
    readonly maxAgeMs: number,
    readonly scope: CacheScopeFunction | undefined,
  ) {}

  /** The call's key within its stack's cache, or `undefined` (told as `fallback.cache_scope_failed`) when it has no scope. */
  keyOf(ctx: ToolContext): string | undefined {
    if (this.scope === undefined) return ctx.fingerprint
    let scope: unknown
    let problem: string | undefined
    try {
      scope = this.scope(ctx)
      problem = scopeProblem(scope)
    } catch (err) {
      problem = thrownText(err)
    }
    if (problem === undefined) return `${scope as string} ${ctx.fingerprint}`
    ctx.emit('fallback.cache_scope_failed', { problem })
    ctx.log.error(
      { tool: ctx.call.name, problem },
      'fallback: cacheScope gave no scope; this call is neither cached nor answered from the cache',
    )
    return undefined
  }

  lookup(ctx: ToolContext, key: string): CachedResult | undefined {
    return this.#of(ctx, false)?.lookup(key, ctx.clock.now())
  }

  store(ctx: ToolContext, key: string, value: unknown): void {
    this.#of(ctx, true)?.store(key, value, ctx.clock.now())
  }

  #of(ctx: ToolContext, create: boolean): ResultCache | undefined {
    const stack = ctx.stackKey
    // A context not made by a stack has no stack to be kept apart from: no cache rather than a shared one.
    if (typeof stack !== 'object' || stack === null) return undefined
    let cache = this.#byStack.get(stack)
    if (cache === undefined && create) {
      cache = new ResultCache(this.maxEntries, this.maxAgeMs)
      this.#byStack.set(stack, cache)
    }
    return cache
  }
}
