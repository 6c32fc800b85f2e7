import { buildLayers, checkTools } from './build-layers.js'
import { buildModelLayers } from './build-model-layers.js'
import { ConfigError, type ConfigIssue } from './config-error.js'
import type { ConfigInput } from './config-schema.js'
import { createStores } from './config-stores.js'
import { type LoadConfigOptions, loadConfig, type ShallotConfig } from './load-config.js'

export interface CheckConfigOptions extends LoadConfigOptions {
  /**
   * The names of the tools the stack will serve, when known. Without them, the tool names under
   * `tools:` cannot be checked (tools are defined in code), and {@link ConfigCheck.unchecked} says so.
   */
  tools?: readonly string[]
}

/** What {@link checkConfig} found. */
export interface ConfigCheck {
  /** The config, when it has no problem. */
  readonly config: ShallotConfig | undefined
  /** Every problem, as `loadConfig` and `createStackFromConfig` report them, in the order of the file. */
  readonly issues: readonly ConfigIssue[]
  /** The problems as the one error `loadConfig` or `createStackFromConfig` would throw; `undefined` when there are none. */
  readonly error: ConfigError | undefined
  /** What the file names that only the code can confirm, in words; empty when everything was checked. */
  readonly unchecked: readonly string[]
}

/**
 * Checks a config as completely as can be done without the application: everything `loadConfig`
 * checks, and then every layer built once, as `createStackFromConfig` builds it (so options a
 * middleware refuses when it is created are found too), with in-memory stores. Tool names are
 * checked when `tools` is given, and listed in `unchecked` otherwise. Never throws a ConfigError.
 *
 * @example
 * const check = await checkConfig('shallot.yaml')
 * for (const issue of check.issues) console.error(issue.message)
 * for (const note of check.unchecked) console.log(`not checked: ${note}`)
 */
export async function checkConfig(pathOrObject: string | URL | ConfigInput, options: CheckConfigOptions = {}): Promise<ConfigCheck> {
  const { tools, ...loadOptions } = options
  let config: ShallotConfig
  try {
    config = await loadConfig(pathOrObject, loadOptions)
  } catch (err) {
    if (!ConfigError.is(err)) throw err
    return { config: undefined, issues: err.issues, error: err, unchecked: [] }
  }
  const named = Object.keys(config.document.tools)
  const issues = tools === undefined ? [] : checkTools(config, tools)
  const env = { stores: createStores(), configDir: config.dir }
  for (const build of [() => buildLayers(config, undefined, env, new Map()), () => buildModelLayers(config, env, new Map())]) {
    try {
      build()
    } catch (err) {
      if (!ConfigError.is(err)) throw err
      issues.push(...err.issues)
    }
  }
  if (issues.length > 0) {
    const order = (i: ConfigIssue) => i.line ?? Number.MAX_SAFE_INTEGER
    const sorted = [...issues].sort((a, b) => order(a) - order(b))
    return { config: undefined, issues: sorted, error: new ConfigError(config.file, sorted), unchecked: [] }
  }
  const unchecked =
    tools === undefined && named.length > 0
      ? [
          `that the tools named under tools: exist (${named.join(', ')}): tools are defined in code, and createStackFromConfig checks their names when it builds the stack`,
        ]
      : []
  return { config, issues: [], error: undefined, unchecked }
}
