import { type AnyTool, defineTool, type Middleware, type MiddlewareEnv, OptionsError, toolSideOf } from '@shallot/core'
import { canonicalJson, closest } from '@shallot/core/kit'
import { ConfigError, type ConfigIssue } from './config-error.js'
import { OFF } from './config-schema.js'
import type { PathKey } from './config-source.js'
import { makeIssue } from './describe-issue.js'
import type { ShallotConfig } from './load-config.js'
import { perTool } from './per-tool.js'
import type { LayerPlan, LayerVariant } from './plan-layers.js'
import { toolEffects } from './tool-effects.js'

/** Built layer instances by what built them, so a reconfigure keeps the ones whose options did not change. */
export type LayerCache = ReadonlyMap<string, { readonly definition: LayerPlan['definition']; readonly layer: Middleware }>

/** The layers of one configuration, ready for `stack.setMiddleware`. */
export interface BuiltLayers {
  readonly middleware: readonly Middleware[]
  readonly cache: LayerCache
  /** Layer instances taken over from the previous configuration. */
  readonly kept: number
  /** Layer instances created for this configuration. */
  readonly created: number
}

/** `cooldown.maxMs` or `rules[0].then` (an OptionsError's path) as path keys. */
function pathKeys(text: string): PathKey[] {
  const keys: PathKey[] = []
  for (const match of text.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) keys.push(match[2] === undefined ? (match[1] as string) : Number(match[2]))
  return keys
}

function createIssues(err: unknown, plan: LayerPlan, variant: LayerVariant, lineOf: ShallotConfig['source']['lineOf']): ConfigIssue[] {
  if (err instanceof OptionsError || (err instanceof TypeError && Array.isArray((err as Partial<OptionsError>).issues))) {
    return (err as OptionsError).issues.map((i) => makeIssue(variant.place(pathKeys(i.path)), lineOf, { message: i.message }))
  }
  const text = err instanceof Error ? err.message : String(err)
  return [makeIssue(variant.place([]), lineOf, { message: `${plan.name} refused these options: ${text.split('\n')[0]}` })]
}

/** A problem for each tool the config names that is not among `names`. */
export function checkTools(config: ShallotConfig, names: readonly string[]): ConfigIssue[] {
  const known = new Set(names)
  const issues: ConfigIssue[] = []
  for (const name of Object.keys(config.document.tools)) {
    if (known.has(name)) continue
    const guess = closest(name, names)
    issues.push(
      makeIssue(['tools', name], config.source.lineOf, {
        message: `no tool named "${name}"`,
        received: name,
        allowed: `a tool of the stack: ${names.join(', ') || '(none)'}`,
        hint: guess === undefined ? undefined : `did you mean '${guess}'?`,
      }),
    )
  }
  return issues
}

/**
 * Builds the layers a config describes, in front of `tools`: one instance per stack entry and one per
 * tool override, each created once here and never per call; a layer with overrides becomes a
 * {@link perTool} wrapper, and effect overrides add a {@link toolEffects} layer outside the rest.
 * Instances in `previous` whose middleware, tool and options are unchanged are kept as they are,
 * with whatever state they hold. Throws a {@link ConfigError} when a tool is unknown or a
 * middleware refuses its options. With `tools` undefined (a check without the code), tool names and
 * effect overrides are not checked.
 *
 * @example
 * const { middleware } = buildLayers(config, stack.tools, { stores }, new Map())
 * stack.setMiddleware(middleware)
 */
export function buildLayers(
  config: ShallotConfig,
  tools: ReadonlyMap<string, AnyTool> | undefined,
  env: MiddlewareEnv,
  previous: LayerCache,
): BuiltLayers {
  const issues = tools === undefined ? [] : checkTools(config, [...tools.keys()])
  const cache = new Map<string, { definition: LayerPlan['definition']; layer: Middleware }>()
  let kept = 0
  let created = 0

  function instance(plan: LayerPlan, variant: LayerVariant, tool: string): Middleware | undefined {
    const key = `${plan.name}\u0000${tool}\u0000${canonicalJson(variant.raw)}`
    const old = previous.get(key)
    if (old !== undefined && old.definition === plan.definition) {
      cache.set(key, old)
      kept++
      return old.layer
    }
    try {
      // A definition's create returns a layer (retry(): both sides) or a tool middleware: the tool side is what runs here.
      const layer = toolSideOf(plan.definition.create(variant.parsed as never, env), `${plan.name}: create()`)
      cache.set(key, { definition: plan.definition, layer })
      created++
      return layer
    } catch (err) {
      issues.push(...createIssues(err, plan, variant, config.source.lineOf))
      return undefined
    }
  }

  const middleware: Middleware[] = []
  for (const plan of config.layers) {
    const base = instance(plan, plan.base, '')
    if (plan.tools.size === 0) {
      if (base !== undefined) middleware.push(base)
      continue
    }
    const byTool = new Map<string, Middleware | undefined>()
    for (const [tool, variant] of plan.tools) byTool.set(tool, variant === OFF ? undefined : instance(plan, variant, tool))
    if (base !== undefined) middleware.push(perTool(base, byTool))
  }

  const overridden = new Map<string, AnyTool>()
  for (const [name, effect] of config.effects) {
    const tool = tools?.get(name)
    if (tool !== undefined && tool.effect !== effect) overridden.set(name, defineTool({ ...tool, effect }) as AnyTool)
  }
  if (overridden.size > 0) middleware.unshift(toolEffects(overridden))

  if (issues.length > 0) throw new ConfigError(config.file, issues)
  return { middleware, cache, kept, created }
}
