import type { RunContext, ToolCall, ToolContext, ToolResult } from '@shallot/core'
import { z } from 'zod'
import type { CacheScopeFunction } from './call-cache.js'
import { MAX_MODELS, modelShape, modelSpecSchema } from './model-fallback.js'

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

/** One fallback source once checked. */
export type ParsedSource = z.output<typeof fallbackSourceSchema>

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

/** The default of `maxCacheEntries`. */
export const DEFAULT_CACHE_ENTRIES = 1000
/** The default of `cacheMaxAgeMs`: an hour. */
export const DEFAULT_CACHE_MAX_AGE_MS = 3_600_000

// No defaults applied here (the tool side fills them in; `meta` only documents them): whether an option was given decides
// which sides the layer has (see checkSides).
const toolShape = {
  /** Tool calls only: sources per tool name, tried in order until one answers. */
  tools: z.record(toolName, sourcesSchema).optional(),
  /** Tool calls only: sources for every `read` or `idempotent` tool not listed in `tools`. Default: none. */
  default: sourcesSchema.optional(),
  /** Tool calls only: the error codes that fall back; any other failure reaches the model as it is. Default {@link DEFAULT_FALLBACK_CODES}. */
  on: z
    .array(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a snake_case error code'))
    .min(1)
    .optional()
    .meta({ default: [...DEFAULT_FALLBACK_CODES] }),
  /** Tool calls only: most results the cache keeps per stack (the least recently used is forgotten). Default 1000. */
  maxCacheEntries: cacheEntries.optional(),
  /** @deprecated Use `maxCacheEntries`; `cacheEntries` goes in the next minor version. */
  cacheEntries: cacheEntries.optional(),
  /** Tool calls only: oldest result the cache serves. Default 1 hour. */
  cacheMaxAgeMs: z.number().int().positive().optional().meta({ default: DEFAULT_CACHE_MAX_AGE_MS }),
}

/** The options that configure the tool side, which a layer of spare models alone does not have. */
const TOOL_ONLY = ['on', 'maxCacheEntries', 'cacheEntries', 'cacheMaxAgeMs', 'cacheScope', 'dispatch'] as const

/**
 * Which sides the options make: a model side when `models` is given; a tool side when tool sources
 * (`tools`, `default`) are, or when `models` is not (a layer of no sources answers nothing, as before).
 *
 * @example
 * sidesOf({ models: ['openai:gpt-4o'] }) // { tools: false, models: true }
 */
export function sidesOf(o: { tools?: unknown; default?: unknown; models?: unknown }): { tools: boolean; models: boolean } {
  const models = o.models !== undefined
  return { tools: !models || o.tools !== undefined || o.default !== undefined, models }
}

/** An option for one side given to a layer without that side: it would do nothing, so it is refused, saying why. */
function checkSides(o: Record<string, unknown>, issues: z.RefinementCtx): void {
  const sides = sidesOf(o)
  if (!sides.tools) {
    for (const option of TOOL_ONLY) {
      if (o[option] === undefined) continue
      issues.addIssue({
        code: 'custom',
        path: [option],
        message:
          'applies to tool calls only, and a layer of spare models alone has no tool side: give tools or default too, or leave it out',
      })
    }
  }
  if (!sides.models && o.resolveModel !== undefined) {
    issues.addIssue({ code: 'custom', path: ['resolveModel'], message: 'applies to model calls only: give models (the spare models) too' })
  }
}

type ParsedSources = z.output<typeof sourcesSchema>

function checkSources(
  o: {
    tools?: Record<string, ParsedSources> | undefined
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
  const all: Array<readonly [string, ParsedSources, readonly string[]]> = Object.entries(o.tools ?? {}).map(([owner, sources]) => [
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
 * Options of {@link fallback}: tool-call sources (`tools`, `default`) and their settings make its tool
 * side, spare models (`models`, `resolveModel`) its model side; each says which calls it applies to.
 *
 * @example
 * fallbackOptionsSchema.parse({ tools: { status_page: { from: 'cache' } }, models: [claude] })
 */
export const fallbackOptionsSchema = z
  .strictObject({
    ...toolShape,
    /**
     * Tool calls only: the scope of a call's cached results, e.g. its tenant: a call is answered only from
     * results of its own scope (and stack). Code, so not in a config file. Default: every run of the stack shares.
     */
    cacheScope: fn<CacheScopeFunction>('(ctx) => string, e.g. (ctx) => tenantOf(ctx.run)').optional(),
    /** Tool calls only: runs a `from: 'tool'` fallback through the stack. Needed only when some source is a tool. */
    dispatch: fn<FallbackDispatch>('(call, { run, signal }) => Promise<ToolResult>, e.g. (call, o) => stack.dispatch(call, o)').optional(),
    ...modelShape,
  })
  .superRefine((o, issues) => {
    checkSources(o, issues, true)
    checkSides(o, issues)
  })

/**
 * Fallback as a config file writes it: everything but the functions (`dispatch`, which the host hands
 * over as `env.dispatch`, so a tool source then gets the same arguments; `cacheScope`; `resolveModel`,
 * the host's `env.resolveModel`), and the spare models as `provider:id`.
 *
 * @example
 * fallbackFileOptionsSchema.parse({ tools: { status_page: { from: 'cache' } }, cacheMaxAgeMs: 600_000 })
 */
export const fallbackFileOptionsSchema = z
  .strictObject({
    ...toolShape,
    /** Model calls only: the spare models, as `provider:id`, resolved by the host's `env.resolveModel`. */
    models: z.array(modelSpecSchema).min(1).max(MAX_MODELS).optional(),
  })
  .superRefine((o, issues) => {
    checkSources(o, issues, false)
    checkSides(o, issues)
  })

/** What {@link fallback} accepts. */
export type FallbackOptions = z.input<typeof fallbackOptionsSchema>

/** The options once checked: what each side is built from. */
export type FallbackConfig = z.output<typeof fallbackOptionsSchema>
