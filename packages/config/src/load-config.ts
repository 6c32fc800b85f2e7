import { open } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { MiddlewareDefinition, ToolEffect } from '@shallot/core'
import { closest } from '@shallot/core/kit'
import { builtinDefinitions } from './builtins.js'
import { ConfigError, type ConfigIssue } from './config-error.js'
import { type ConfigDocument, type ConfigInput, configSchema, entryParts } from './config-schema.js'
import { type ConfigSource, checkMaxBytes, objectSource, parseSource, tooBig } from './config-source.js'
import { issuesFromZod, makeIssue } from './describe-issue.js'
import { jsonSchemaOf } from './describe-schema.js'
import { loadMiddleware, MiddlewareLoadError } from './load-middleware.js'
import { type Broken, type LayerPlan, planLayers } from './plan-layers.js'
import { salvage } from './salvage.js'

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
  /** The model-call layers (`modelMiddleware:`), outermost first; empty when the file lists none. */
  readonly modelLayers: readonly LayerPlan[]
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
  /** The largest config file read, in bytes; a larger one is refused before it is read. Default 1 MiB. */
  maxBytes?: number
}

const loaded = new WeakSet<ShallotConfig>()

/** Issues in the order of the file (a stable sort keeps the order of those on one line). */
function byLine(issues: readonly ConfigIssue[]): ConfigIssue[] {
  const order = (i: ConfigIssue) => i.line ?? Number.MAX_SAFE_INTEGER
  return [...issues].sort((a, b) => order(a) - order(b))
}

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

/**
 * Reads a config file's text, refusing one over `maxBytes` before reading it (and, should it grow
 * meanwhile, after reading no more than one byte past the cap).
 *
 * @example
 * const text = await readConfigText('/srv/agent/shallot.yaml', 1024 * 1024)
 */
export async function readConfigText(path: string, maxBytes: number): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined
  try {
    handle = await open(path, 'r')
    const { size } = await handle.stat()
    if (size > maxBytes) throw tooBig(path, size, maxBytes)
    const buffer = Buffer.alloc(Math.min(size, maxBytes) + 1)
    let length = 0
    for (let read = -1; read !== 0 && length < buffer.length; length += read) {
      read = (await handle.read(buffer, length, buffer.length - length, null)).bytesRead
    }
    if (length > maxBytes) throw tooBig(path, length, maxBytes)
    return buffer.toString('utf8', 0, length)
  } catch (err) {
    if (ConfigError.is(err)) throw err
    const code = (err as { code?: unknown }).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : String((err as Error).message ?? err)
    throw new ConfigError(path, [issue(`cannot read the config file: ${why}`)], { cause: err })
  } finally {
    await handle?.close()
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
  const maxBytes = checkMaxBytes(options.maxBytes)
  const source = file === undefined ? objectSource(pathOrObject) : parseSource(await readConfigText(file, maxBytes), file, { maxBytes })
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
  const issues: ConfigIssue[] = [...(source.issues ?? [])]
  const structure = await configSchema.safeParseAsync(source.data)
  let document: ConfigDocument
  let broken: Broken | undefined
  if (structure.success) {
    document = structure.data
  } else {
    issues.push(...issuesFromZod(structure.error, { input: source.data, schema: jsonSchemaOf(configSchema), place: (p) => p, lineOf }))
    // The parts that passed are still checked, so one wrong value does not hide the others.
    const kept = salvage(source.data, structure.error.issues)
    if (kept === undefined) throw new ConfigError(file, byLine(issues))
    ;({ document, broken } = kept)
  }
  const registry = new Map<string, MiddlewareDefinition>()
  for (const definition of [...builtinDefinitions, ...(options.middleware ?? [])]) registry.set(definition.name, definition)
  const builtinNames = builtinDefinitions.map((d) => d.name)

  // Each package once, reported at the first entry that names it, in either list.
  const wanted = new Map<string, readonly [list: 'stack' | 'modelMiddleware', index: number]>()
  const lists = [
    ['stack', document.stack, broken?.entries],
    ['modelMiddleware', document.modelMiddleware ?? [], broken?.modelEntries],
  ] as const
  for (const [list, entries, brokenEntries] of lists) {
    for (const [index, entry] of entries.entries()) {
      if (brokenEntries?.has(index)) continue
      const { name } = entryParts(entry)
      if (!registry.has(name) && !wanted.has(name)) wanted.set(name, [list, index])
    }
  }
  await Promise.all(
    [...wanted].map(async ([name, at]) => {
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
              : reason === 'not_a_package'
                ? `unknown middleware "${name}": ${(err as Error).message}`
                : (err as Error).message
        issues.push(
          makeIssue(at, lineOf, {
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
  const plan = await planLayers(document, registry, lineOf, broken)
  issues.push(...plan.issues)
  if (issues.length > 0) throw new ConfigError(file, byLine(issues))
  const config: ShallotConfig = Object.freeze({
    file,
    dir,
    document,
    layers: plan.layers,
    modelLayers: plan.modelLayers,
    effects: plan.effects,
    source,
  })
  loaded.add(config)
  return config
}
