import { compose, type MiddlewareEnv, type ModelMiddleware, modelSideOf, OptionsError } from '@shallot/core'
import { ConfigError, type ConfigIssue } from './config-error.js'
import type { PathKey } from './config-source.js'
import { makeIssue } from './describe-issue.js'
import type { ShallotConfig } from './load-config.js'
import type { LayerPlan } from './plan-layers.js'

/** Built model layers by what built them, so a reconfigure keeps those whose options did not change (a breaker's counts). */
export type ModelLayerCache = ReadonlyMap<string, { readonly definition: LayerPlan['definition']; readonly layer: ModelMiddleware }>

/** The model layers of one configuration. */
export interface BuiltModelLayers {
  readonly layers: readonly ModelMiddleware[]
  readonly cache: ModelLayerCache
}

/** `cooldown.maxMs` or `rules[0].then` (an OptionsError's path) as path keys. */
function pathKeys(text: string): PathKey[] {
  const keys: PathKey[] = []
  for (const match of text.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) keys.push(match[2] === undefined ? (match[1] as string) : Number(match[2]))
  return keys
}

function createIssues(err: unknown, plan: LayerPlan, lineOf: ShallotConfig['source']['lineOf']): ConfigIssue[] {
  if (err instanceof OptionsError)
    return err.issues.map((i) => makeIssue(plan.base.place(pathKeys(i.path)), lineOf, { message: i.message }))
  const text = err instanceof Error ? err.message : String(err)
  return [makeIssue(plan.at, lineOf, { message: `${plan.name} refused these options for model calls: ${text.split('\n')[0]}` })]
}

/**
 * Creates the layers of `modelMiddleware:` with each definition's `create` (the model side of the layer
 * it returns) or `createModel`, once per
 * configuration and never per call; an instance in `previous` with the same definition and options
 * is kept with its state. Throws a {@link ConfigError} when a layer refuses its options.
 */
export function buildModelLayers(config: ShallotConfig, env: MiddlewareEnv, previous: ModelLayerCache): BuiltModelLayers {
  const issues: ConfigIssue[] = []
  const cache = new Map<string, { definition: LayerPlan['definition']; layer: ModelMiddleware }>()
  const layers: ModelMiddleware[] = []
  for (const plan of config.modelLayers) {
    // The options as written, in the file's key order: a rewrite that only reorders keys builds anew, which is harmless.
    const key = `${plan.name}\u0000${JSON.stringify(plan.base.raw)}`
    const old = previous.get(key)
    if (old !== undefined && old.definition === plan.definition) {
      cache.set(key, old)
      layers.push(old.layer)
      continue
    }
    try {
      // The options the plan already checked and filled in, as build-layers hands `create` its own.
      const { definition } = plan
      const parsed = plan.base.parsed as never
      const layer =
        definition.createModel === undefined
          ? modelSideOf(definition.create(parsed, env), `${plan.name}: create()`)
          : definition.createModel(parsed, env)
      if (typeof layer !== 'function') throw new TypeError(`createModel() returned ${typeof layer}, not a model middleware function`)
      cache.set(key, { definition: plan.definition, layer })
      layers.push(layer)
    } catch (err) {
      issues.push(...createIssues(err, plan, config.source.lineOf))
    }
  }
  if (issues.length > 0) throw new ConfigError(config.file, issues)
  return { layers, cache }
}

/**
 * The model onion a config describes, as one model middleware for `createAgent({ modelMiddleware })`
 * that can be switched: each call runs through the layers current when it started, and `swap`
 * makes the next calls use others (a retry policy changed in the file changes the next call's retries).
 */
export function switchableModelOnion(layers: readonly ModelMiddleware[]): {
  readonly middleware: ModelMiddleware
  swap(next: readonly ModelMiddleware[]): void
} {
  let onion = compose(layers)
  return {
    middleware: function configModelMiddleware(ctx, next) {
      return onion(ctx, next)
    },
    swap(next) {
      onion = compose(next)
    },
  }
}
