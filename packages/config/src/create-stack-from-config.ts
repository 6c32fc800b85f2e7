import { createStack, type MiddlewareEnv, type Stack, type StackOptions } from '@shallot/core'
import { type BuiltLayers, buildLayers, type LayerCache } from './build-layers.js'
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

  function build(next: ShallotConfig): BuiltLayers {
    const env: MiddlewareEnv = { stores, configDir: next.dir }
    return buildLayers(next, stack.tools, env, cache)
  }

  const first = build(config)
  stack.setMiddleware(first.middleware)
  cache = first.cache

  return {
    ...stack,
    get config() {
      return current
    },
    stores,
    reconfigure(next) {
      requireConfig(next, 'reconfigure()')
      const built = build(next)
      stack.setMiddleware(built.middleware)
      cache = built.cache
      current = next
      stack.logger.info(
        { file: next.file, layers: next.layers.map((l) => l.name), kept: built.kept, created: built.created },
        'shallot config applied',
      )
    },
  }
}
