import type { ToolContext } from '@shallot/core'
import { scopeFrom } from '@shallot/core/kit'
import { type CachedResult, ResultCache } from './result-cache.js'

/** Computes the scope of a call's cached results (for example its tenant) from its context. */
export type CacheScopeFunction = (ctx: ToolContext) => string

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
    const asked = scopeFrom(this.scope, ctx)
    if ('scope' in asked) return `${asked.scope} ${ctx.fingerprint}`
    ctx.emit('fallback.cache_scope_failed', { problem: asked.problem })
    ctx.log.error(
      { tool: ctx.call.name, problem: asked.problem },
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
