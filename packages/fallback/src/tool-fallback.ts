import { abortReason, LoopError, type Middleware, type Next, type ToolContext, ToolError, type ToolResult } from '@shallot/core'
import { CallCache } from './call-cache.js'
import { describeAge } from './describe-age.js'
import {
  DEFAULT_CACHE_ENTRIES,
  DEFAULT_CACHE_MAX_AGE_MS,
  DEFAULT_FALLBACK_CODES,
  type FallbackConfig,
  type FallbackDispatch,
  type ParsedSource as Source,
} from './fallback-options.js'

/**
 * The answer the model reads instead of the failure: a short note saying where the value came from
 * (`cached 4 min ago`, `from status_mirror`, `a default answer`), and the value. The note names no
 * failure and no error code: a model reads an answer it can use, not a failure to work around (the
 * `fallback.used` event keeps the code for the operator).
 */
export interface FallbackAnswer {
  readonly note: string
  readonly value: unknown
}

/** A string that holds a JSON object or array goes to the model as that JSON, not as an escaped string inside the answer. */
function asJson(value: unknown): unknown {
  if (typeof value !== 'string') return value
  const text = value.trim()
  if (!(text.startsWith('{') && text.endsWith('}')) && !(text.startsWith('[') && text.endsWith(']'))) return value
  try {
    return JSON.parse(text)
  } catch {
    return value
  }
}

const clone = (value: unknown): { ok: true; value: unknown } | { ok: false } => {
  // Primitives cannot be mutated: most tools answer with a string, and copying one costs a clone's setup for nothing.
  const type = typeof value
  if (value === null || (type !== 'object' && type !== 'function' && type !== 'symbol')) return { ok: true, value }
  try {
    return { ok: true, value: structuredClone(value) }
  } catch {
    return { ok: false }
  }
}

/**
 * The tool side of {@link fallback}: a `read` or `idempotent` call that fails with a code in `on` is
 * answered from its sources in order (the cache, another tool through `dispatch`, a fixed value), with
 * a note saying so. A `write` never falls back and is never cached; a fallback call never falls back
 * itself; the cache is kept per stack and, with `cacheScope`, per scope.
 */
export function toolFallback(o: FallbackConfig): Middleware {
  const byTool = new Map(Object.entries(o.tools ?? {}))
  const codes = new Set(o.on ?? DEFAULT_FALLBACK_CODES)
  const cache = new CallCache(
    o.maxCacheEntries ?? o.cacheEntries ?? DEFAULT_CACHE_ENTRIES,
    o.cacheMaxAgeMs ?? DEFAULT_CACHE_MAX_AGE_MS,
    o.cacheScope,
  )
  // Which source lists read the cache, worked out once: only their tools pay for hashing and cloning.
  const caching = new WeakSet<readonly Source[]>()
  for (const sources of [...byTool.values(), ...(o.default === undefined ? [] : [o.default])])
    if (sources.some((s) => s.from === 'cache')) caching.add(sources)
  // Calls this layer made itself, by id and how many are in flight: they never fall back again.
  const nested = new Map<string, number>()

  async function answer(
    ctx: ToolContext,
    source: Source,
    position: number,
    error: ToolError,
    cacheKey: string | undefined,
  ): Promise<FallbackAnswer | undefined> {
    const name = ctx.call.name
    if (source.from === 'value') {
      ctx.emit('fallback.used', { from: 'value', because: error.code })
      return { note: 'a default answer', value: asJson(structuredClone(source.value)) }
    }
    if (source.from === 'cache') {
      const entry = cacheKey === undefined ? undefined : cache.lookup(ctx, cacheKey)
      const copy = entry === undefined ? undefined : clone(entry.value)
      if (entry === undefined || copy === undefined || !copy.ok) return undefined
      const ageMs = ctx.clock.now() - entry.storedAt
      ctx.emit('fallback.used', { from: 'cache', because: error.code, ageMs })
      return { note: `cached ${describeAge(ageMs)} ago`, value: asJson(copy.value) }
    }
    if (source.tool === name) return undefined
    // Named after the call it answers and the source's place, so the same call makes it under the same id
    // again: a person's answer to it (an approval, on resume) names it.
    const id = `${ctx.call.id}/fallback-${position + 1}`
    nested.set(id, (nested.get(id) ?? 0) + 1)
    let result: ToolResult
    try {
      const args = source.args === undefined ? ctx.call.args : source.args(ctx.call.args, ctx)
      result = await (o.dispatch as FallbackDispatch)({ id, name: source.tool, args }, { run: ctx.run, signal: ctx.signal })
    } catch (err) {
      // A nested call that ends the run ends this one too; a broken mapping or dispatch only loses this source.
      if (LoopError.is(err)) throw err
      ctx.log.error({ err, tool: source.tool }, 'fallback: calling the fallback tool threw')
      ctx.emit('fallback.tool_failed', { via: source.tool, code: 'thrown' })
      return undefined
    } finally {
      const left = (nested.get(id) ?? 1) - 1
      if (left === 0) nested.delete(id)
      else nested.set(id, left)
    }
    if (!result.ok) {
      ctx.emit('fallback.tool_failed', { via: source.tool, code: result.error?.code })
      return undefined
    }
    ctx.emit('fallback.used', { from: 'tool', via: source.tool, because: error.code })
    return { note: `from ${source.tool}`, value: asJson(result.value) }
  }

  return async function fallback(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || tool.effect === 'write' || nested.has(ctx.call.id)) return next()
    const sources = byTool.get(tool.name) ?? o.default
    if (sources === undefined) return next()
    // The scope is asked before the call runs, so what inner layers do to the context cannot change it.
    const cacheKey = caching.has(sources) ? cache.keyOf(ctx) : undefined
    try {
      await next()
    } catch (err) {
      if (LoopError.is(err) || !ToolError.is(err) || !codes.has(err.code)) throw err
      const signal = ctx.signal
      if (signal.aborted) throw abortReason(signal)
      for (const [position, source] of sources.entries()) {
        const found = await answer(ctx, source, position, err, cacheKey)
        if (found === undefined) continue
        ctx.result = { value: found, replayed: source.from === 'cache' }
        return
      }
      ctx.emit('fallback.unavailable', { because: err.code, tried: sources.map((s) => s.from) })
      throw err
    }
    const output = ctx.result
    if (cacheKey === undefined || output === undefined) return
    const copy = clone(output.value)
    if (copy.ok) cache.store(ctx, cacheKey, copy.value)
    else ctx.log.debug({ tool: tool.name }, 'fallback: result cannot be cloned, not cached')
  }
}
