import {
  abortReason,
  LoopError,
  type Middleware,
  type Next,
  parseOptions,
  type RunContext,
  type ToolCall,
  type ToolContext,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { z } from 'zod'
import { type CacheScopeFunction, CallCache } from './call-cache.js'
import { describeAge } from './describe-age.js'
import { modelSpecSchema } from './fallback-model.js'

const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/
const toolName = z.string().regex(TOOL_NAME, 'must be a tool name (a letter, then up to 63 letters, digits, "_", "-" or ".")')
const fn = <T>(shape: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function ${shape}` })

/** Where a fallback answer comes from. */
export const fallbackSourceSchema = z.discriminatedUnion(
  'from',
  [
    /** The last good result of the same tool with the same arguments (canonical JSON: key order does not matter). */
    z.strictObject({ from: z.literal('cache') }),
    /** Another tool of the same stack, called through `dispatch`; `args` maps the failed call's arguments (default: the same). */
    z.strictObject({
      from: z.literal('tool'),
      tool: toolName,
      args: fn<(args: unknown, ctx: ToolContext) => unknown>('(args, ctx) => args').optional(),
    }),
    /** A fixed answer. */
    z.strictObject({ from: z.literal('value'), value: z.json() }),
  ],
  { error: "must be { from: 'cache' }, { from: 'tool', tool: 'name' } or { from: 'value', value: ... }" },
)

/** One fallback source, as {@link fallback} takes it. */
export type FallbackSource = z.input<typeof fallbackSourceSchema>

const sourcesSchema = z
  .union([fallbackSourceSchema, z.array(fallbackSourceSchema).min(1).max(5)])
  .transform((s) => (Array.isArray(s) ? s : [s]))

/** The codes that fall back unless `on` says otherwise: the failures that say the tool is down, not that the call was wrong. */
export const DEFAULT_FALLBACK_CODES: readonly string[] = Object.freeze([
  'circuit_open',
  'timeout',
  'upstream_error',
  'network_error',
  'rate_limited',
  'overloaded',
])

/** What `dispatch` must be: a stack's `dispatch`, late-bound, e.g. `(call, options) => stack.dispatch(call, options)`. */
export type FallbackDispatch = (call: ToolCall, options: { run: RunContext; signal: AbortSignal }) => Promise<ToolResult>

const cacheEntries = z.number().int().min(1).max(1_000_000)
const DEFAULT_CACHE_ENTRIES = 1000

const optionsShape = {
  /** Sources per tool name, tried in order until one answers. */
  tools: z.record(toolName, sourcesSchema).default({}),
  /** Sources for every `read` or `idempotent` tool not listed in `tools`. Default: none. */
  default: sourcesSchema.optional(),
  /** The error codes that fall back; any other failure reaches the model as it is. */
  on: z
    .array(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a snake_case error code'))
    .min(1)
    .default([...DEFAULT_FALLBACK_CODES]),
  /** Most results the cache keeps per stack (the least recently used is forgotten). Default 1000. */
  maxCacheEntries: cacheEntries.optional(),
  /** @deprecated Use `maxCacheEntries`; `cacheEntries` goes in the next minor version. */
  cacheEntries: cacheEntries.optional(),
  /** Oldest result the cache serves. Default 1 hour. */
  cacheMaxAgeMs: z.number().int().positive().default(3_600_000),
}

type ParsedSources = z.output<typeof sourcesSchema>

function checkSources(
  o: {
    tools: Record<string, ParsedSources>
    default?: ParsedSources | undefined
    dispatch?: unknown
    maxCacheEntries?: number | undefined
    cacheEntries?: number | undefined
  },
  issues: z.RefinementCtx,
  needsDispatch: boolean,
): void {
  if (o.maxCacheEntries !== undefined && o.cacheEntries !== undefined) {
    issues.addIssue({ code: 'custom', path: ['cacheEntries'], message: 'give maxCacheEntries only (cacheEntries is its old name)' })
  }
  const all: Array<readonly [string, ParsedSources, readonly string[]]> = Object.entries(o.tools).map(([owner, sources]) => [
    owner,
    sources,
    ['tools', owner],
  ])
  if (o.default !== undefined) all.push(['', o.default, ['default']])
  for (const [owner, sources, path] of all) {
    sources.forEach((source, i) => {
      if (source.from !== 'tool') return
      if (source.tool === owner) {
        issues.addIssue({ code: 'custom', path: [...path, i, 'tool'], message: `'${owner}' cannot fall back to itself` })
      }
      if (needsDispatch && o.dispatch === undefined) {
        issues.addIssue({
          code: 'custom',
          path: ['dispatch'],
          message: `is needed to call fallback tool '${source.tool}': pass (call, options) => stack.dispatch(call, options)`,
        })
      }
    })
  }
}

/**
 * Options of {@link fallback}.
 *
 * @example
 * fallbackOptionsSchema.parse({ tools: { status_page: { from: 'cache' } } }).on // ['circuit_open', 'timeout', ...]
 */
export const fallbackOptionsSchema = z
  .strictObject({
    ...optionsShape,
    /**
     * The scope of a call's cached results, e.g. its tenant: a call is answered only from results of
     * its own scope (and stack). Code, so not in a config file. Default: every run of the stack shares.
     */
    cacheScope: fn<CacheScopeFunction>('(ctx) => string, e.g. (ctx) => tenantOf(ctx.run)').optional(),
    /** Runs a `from: 'tool'` fallback through the stack. Needed only when some source is a tool. */
    dispatch: fn<FallbackDispatch>('(call, { run, signal }) => Promise<ToolResult>, e.g. (call, o) => stack.dispatch(call, o)').optional(),
  })
  .superRefine((o, issues) => checkSources(o, issues, true))

/**
 * Fallback as a config file writes it: everything but `dispatch`, which the host hands over as
 * `env.dispatch` (a function cannot be written in a file); a tool source then gets the same arguments.
 * `models` (the spare models of model calls, as `provider:id`) is read by the model layer only.
 *
 * @example
 * fallbackFileOptionsSchema.parse({ tools: { status_page: { from: 'cache' } }, cacheMaxAgeMs: 600_000 })
 */
export const fallbackFileOptionsSchema = z
  .strictObject({
    ...optionsShape,
    /** Model calls only: the spare models, as `provider:id`, resolved by the host's `env.resolveModel`. */
    models: z.array(modelSpecSchema).min(1).max(10).optional(),
  })
  .superRefine((o, issues) => checkSources(o, issues, false))

/** What {@link fallback} accepts. */
export type FallbackOptions = z.input<typeof fallbackOptionsSchema>

type Source = z.output<typeof fallbackSourceSchema>

/** The answer the model reads instead of the failure: the value, and a note that says where it came from. */
export interface FallbackAnswer {
  readonly fallback: string
  readonly value: unknown
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
 * When a `read` or `idempotent` call fails in a way that says the tool is down (its circuit is
 * open, it timed out past retry, it is overloaded: the codes in `on`), answers from a fallback
 * instead: the last good result of the same call (`from: 'cache'`, with its age), another tool
 * (`from: 'tool'`, through the stack's `dispatch`), or a fixed value. The model reads the answer
 * with a note saying so: `{ "fallback": "from cache, 4 min old, because 'status_page' failed (circuit_open)", "value": ... }`.
 * A `write` never falls back and is never cached: an answer that did not come from doing the
 * write would tell the model something happened that did not. A fallback call never falls back
 * itself, so two tools that name each other cannot recurse. The cache is kept per stack and, with
 * `cacheScope`, per tenant: no call is answered from another stack's or scope's result. Put it
 * outside the circuit breaker and retry, so it sees what they finally say.
 *
 * @example
 * let stack: Stack
 * const layer = fallback({
 *   tools: { status_page: [{ from: 'cache' }, { from: 'tool', tool: 'status_mirror' }], weather: { from: 'value', value: 'unknown' } },
 *   dispatch: (call, options) => stack.dispatch(call, options),
 * })
 * stack = createStack({ tools, middleware: [layer, circuitBreaker(), retry(), timeout()] })
 */
export function fallback(options?: FallbackOptions): Middleware {
  const o = parseOptions('fallback()', fallbackOptionsSchema, options)
  const byTool = new Map(Object.entries(o.tools))
  const codes = new Set(o.on)
  const cache = new CallCache(o.maxCacheEntries ?? o.cacheEntries ?? DEFAULT_CACHE_ENTRIES, o.cacheMaxAgeMs, o.cacheScope)
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
    const because = `because '${name}' failed (${error.code})`
    if (source.from === 'value') {
      ctx.emit('fallback.used', { from: 'value', because: error.code })
      return { fallback: `a fixed answer, ${because}`, value: structuredClone(source.value) }
    }
    if (source.from === 'cache') {
      const entry = cacheKey === undefined ? undefined : cache.lookup(ctx, cacheKey)
      const copy = entry === undefined ? undefined : clone(entry.value)
      if (entry === undefined || copy === undefined || !copy.ok) return undefined
      const ageMs = ctx.clock.now() - entry.storedAt
      ctx.emit('fallback.used', { from: 'cache', because: error.code, ageMs })
      return { fallback: `from cache, ${describeAge(ageMs)} old, ${because}`, value: copy.value }
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
    return { fallback: `from '${source.tool}', ${because}`, value: result.value }
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
