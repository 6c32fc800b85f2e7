import { readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { closest, type MiddlewareDefinition, type ToolEffect } from '@shallot/core'
import { builtinMiddleware } from './builtins.js'
import { ConfigError, type ConfigIssue } from './config-error.js'
import { type ConfigDocument, type ConfigInput, configSchema, entryParts } from './config-schema.js'
import { type ConfigSource, objectSource, parseSource } from './config-source.js'
import { issuesFromZod, makeIssue } from './describe-issue.js'
import { jsonSchemaOf } from './describe-schema.js'
import { loadMiddleware, MiddlewareLoadError } from './load-middleware.js'
import { type LayerPlan, planLayers } from './plan-layers.js'

/** A validated configuration: the document as written, and every layer resolved and checked. */
export interface ShallotConfig {
  /** Absolute path of the file; `undefined` for a config given as an object. */
  readonly file: string | undefined
  /** Where package names were resolved from. */
  readonly dir: string
  /** The document, defaults filled in (`policies: {}`, `tools: {}`). */
  readonly document: ConfigDocument
  /** The stack's layers, outermost first. */
  readonly layers: readonly LayerPlan[]
  /** Tools whose effect the config overrides. */
  readonly effects: ReadonlyMap<string, ToolEffect>
  /** Where each value was written, for problems found later (a tool that does not exist). */
  readonly source: ConfigSource
}

export interface LoadConfigOptions {
  /** Definitions to offer besides the built-ins and installed packages; a same-named built-in is replaced. */
  middleware?: readonly MiddlewareDefinition[]
  /** Where package names resolve from, for a config given as an object. Default: the working directory. */
  dir?: string
  /** Package export conditions to try first when resolving package names (tests in a monorepo pass their source condition). */
  conditions?: readonly string[]
}

const loaded = new WeakSet<ShallotConfig>()

/**
 * True for a config made by {@link loadConfig} (the only kind a stack accepts).
 *
 * @example
 * isShallotConfig(await loadConfig('shallot.yaml')) // true
 */
export function isShallotConfig(value: unknown): value is ShallotConfig {
  return typeof value === 'object' && value !== null && loaded.has(value as ShallotConfig)
}

const issue = (message: string): ConfigIssue => ({
  path: '',
  line: undefined,
  message,
  received: undefined,
  allowed: undefined,
  hint: undefined,
})

async function readSource(path: string): Promise<ConfigSource> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    const code = (err as { code?: unknown }).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : String((err as Error).message ?? err)
    throw new ConfigError(path, [issue(`cannot read the config file: ${why}`)], { cause: err })
  }
  return parseSource(text, path)
}

function plainCopy(value: unknown): unknown {
  try {
    return structuredClone(value)
  } catch (err) {
    throw new ConfigError(undefined, [issue('the config must be plain data (objects, lists, strings, numbers, booleans, null)')], {
      cause: err,
    })
  }
}

/**
 * Reads and checks a config: a JSON or YAML file (by path), or an object. Named policies are looked
 * up, per-tool overrides merged, package names imported from the file's folder, and every layer's
 * options checked by its middleware's own schema. Throws one {@link ConfigError} listing every problem.
 *
 * @example
 * const config = await loadConfig('shallot.yaml')
 * const stack = createStackFromConfig(config, { tools: [search, chargeCard] })
 */
export async function loadConfig(pathOrObject: string | URL | ConfigInput, options: LoadConfigOptions = {}): Promise<ShallotConfig> {
  const fromFile = typeof pathOrObject === 'string' || pathOrObject instanceof URL
  const file = fromFile ? resolve(pathOrObject instanceof URL ? fileURLToPath(pathOrObject) : pathOrObject) : undefined
  const source = file === undefined ? objectSource(plainCopy(pathOrObject)) : await readSource(file)
  return configFromSource(source, options)
}

/**
 * Checks a parsed document; shared by {@link loadConfig} and the watcher, which has the text already.
 *
 * @example
 * const config = await configFromSource(parseSource(text, '/srv/agent/shallot.yaml'))
 */
export async function configFromSource(source: ConfigSource, options: LoadConfigOptions = {}): Promise<ShallotConfig> {
  const { file, lineOf } = source
  const dir = file === undefined ? resolve(options.dir ?? process.cwd()) : dirname(file)
  const structure = await configSchema.safeParseAsync(source.data)
  if (!structure.success) {
    const issues = issuesFromZod(structure.error, { input: source.data, schema: jsonSchemaOf(configSchema), place: (p) => p, lineOf })
    throw new ConfigError(file, issues)
  }
  const document = structure.data
  const registry = new Map<string, MiddlewareDefinition>()
  for (const definition of [...builtinMiddleware, ...(options.middleware ?? [])]) registry.set(definition.name, definition)
  const builtinNames = builtinMiddleware.map((d) => d.name)

  const issues: ConfigIssue[] = []
  const wanted = new Map<string, number>()
  for (const [index, entry] of document.stack.entries()) {
    const { name } = entryParts(entry)
    if (!registry.has(name) && !wanted.has(name)) wanted.set(name, index)
  }
  await Promise.all(
    [...wanted].map(async ([name, index]) => {
      try {
        registry.set(name, await loadMiddleware(name, dir, options.conditions))
      } catch (err) {
        const reason = err instanceof MiddlewareLoadError ? err.reason : 'failed'
        const guess = reason === 'not_found' ? closest(name, builtinNames) : undefined
        const message =
          guess !== undefined
            ? `unknown middleware "${name}"`
            : reason === 'not_found'
              ? `unknown middleware "${name}": not a built-in, and ${(err as Error).message}`
              : (err as Error).message
        issues.push(
          makeIssue(['stack', index], lineOf, {
            message,
            received: name,
            allowed: `a built-in (${builtinNames.join(', ')}) or an installed package that exports a middleware definition`,
            hint:
              guess !== undefined
                ? `did you mean '${guess}'?`
                : reason === 'not_found'
                  ? `install it (npm install ${name}) or fix the name`
                  : undefined,
          }),
        )
      }
    }),
  )
  const plan = await planLayers(document, registry, lineOf)
  issues.push(...plan.issues)
  if (issues.length > 0) {
    const order = (i: ConfigIssue) => i.line ?? Number.MAX_SAFE_INTEGER
    throw new ConfigError(
      file,
      [...issues].sort((a, b) => order(a) - order(b)),
    )
  }
  const config: ShallotConfig = Object.freeze({ file, dir, document, layers: plan.layers, effects: plan.effects, source })
  loaded.add(config)
  return config
}
