import { createStack, type MiddlewareEnv, type ModelMiddleware, type Stack, type StackOptions } from '@shallot/core'
import { type BuiltLayers, buildLayers, type LayerCache } from './build-layers.js'
import { type BuiltModelLayers, buildModelLayers, type ModelLayerCache, switchableModelOnion } from './build-model-layers.js'
import { type ConfigStores, createStores } from './config-stores.js'
import { isShallotConfig, type ShallotConfig } from './load-config.js'

export interface ConfigStackOptions extends Omit<StackOptions, 'middleware'> {
  /** State that outlives any one configuration; missing ones are created in memory, once per stack. */
  stores?: ConfigStores
}

/** A stack built from a config, that can take a new config while it runs. */
export interface ConfigStack extends Stack {
  /** The configuration new calls run under. */
  readonly config: ShallotConfig
  /** The stores every layer of this stack shares, across reconfigures. */
  readonly stores: ConfigStores
  /**
   * The config's `modelMiddleware:` layers as one model middleware, for `createAgent({ model, stack,
   * modelMiddleware: stack.modelMiddleware })`. A reconfigure swaps them with the tool layers: a call
   * in flight finishes under the layers it started with, the next model call uses the new ones.
   */
  readonly modelMiddleware: ModelMiddleware
  /**
   * Applies a new configuration: calls in flight finish under the layers they started with, new
   * calls use the new ones. Layers whose options did not change are kept with their state. Throws a
   * {@link ConfigError} (and keeps the current configuration) when the new one cannot be built.
   */
  reconfigure(config: ShallotConfig): void
}

function requireConfig(config: unknown, where: string): asserts config is ShallotConfig {
  if (!isShallotConfig(config)) throw new TypeError(`${where} takes a config from loadConfig(), e.g. await loadConfig('shallot.yaml')`)
}

/**
 * Builds a stack from a config: the layers it lists, in its order, each tool's overrides applied,
 * in front of `tools`. The result is a core `Stack` with `reconfigure(config)` for live swaps.
 *
 * @example
 * const stack = createStackFromConfig(await loadConfig('shallot.yaml'), { tools: [search, chargeCard], logger })
 * const result = await stack.dispatch({ id: 'c1', name: 'search', args: { q: 'shallot' } })
 * stack.reconfigure(await loadConfig('shallot.yaml')) // after the file changed
 */
export function createStackFromConfig(config: ShallotConfig, options: ConfigStackOptions): ConfigStack {
  requireConfig(config, 'createStackFromConfig()')
  const { stores: given, ...stackOptions } = options
  const stack = createStack({ ...stackOptions, middleware: [] })
  const stores = createStores(given, stack.clock)
  let current = config
  let cache: LayerCache = new Map()
  let modelCache: ModelLayerCache = new Map()

  // Every layer of both onions is built before either is switched: a config that fails changes nothing.
  function build(next: ShallotConfig): { tools: BuiltLayers; models: BuiltModelLayers } {
    const env: MiddlewareEnv = { stores, configDir: next.dir }
    return { tools: buildLayers(next, stack.tools, env, cache), models: buildModelLayers(next, env, modelCache) }
  }

  const first = build(config)
  stack.setMiddleware(first.tools.middleware)
  cache = first.tools.cache
  const models = switchableModelOnion(first.models.layers)
  modelCache = first.models.cache

  return {
    ...stack,
    get config() {
      return current
    },
    stores,
    modelMiddleware: models.middleware,
    reconfigure(next) {
      requireConfig(next, 'reconfigure()')
      const built = build(next)
      stack.setMiddleware(built.tools.middleware)
      cache = built.tools.cache
      models.swap(built.models.layers)
      modelCache = built.models.cache
      current = next
      stack.logger.info(
        {
          file: next.file,
          layers: next.layers.map((l) => l.name),
          modelLayers: next.modelLayers.map((l) => l.name),
          kept: built.tools.kept,
          created: built.tools.created,
        },
        'shallot config applied',
      )
    },
  }
}
