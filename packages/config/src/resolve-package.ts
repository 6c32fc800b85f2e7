import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, isAbsolute, join, resolve } from 'node:path'

/** Export conditions tried when `require.resolve` cannot answer: an ESM-only package's `import` entry first. */
const ESM_CONDITIONS = ['import', 'node', 'default']

function pickTarget(entry: unknown, conditions: readonly string[]): string | undefined {
  if (typeof entry === 'string') return entry
  if (Array.isArray(entry)) {
    for (const item of entry) {
      const target = pickTarget(item, conditions)
      if (target !== undefined) return target
    }
    return undefined
  }
  if (typeof entry !== 'object' || entry === null) return undefined
  // Node takes the first key, in the package's own order, that names an active condition.
  for (const [key, value] of Object.entries(entry)) {
    if (!conditions.includes(key)) continue
    const target = pickTarget(value, conditions)
    if (target !== undefined) return target
  }
  return undefined
}

function rootEntry(exports: unknown): unknown {
  if (typeof exports !== 'object' || exports === null || Array.isArray(exports)) return exports
  const keys = Object.keys(exports)
  return keys.some((key) => key.startsWith('.')) ? (exports as Record<string, unknown>)['.'] : exports
}

function findPackageDir(name: string, fromDir: string): string | undefined {
  for (let dir = resolve(fromDir); ; dir = dirname(dir)) {
    const own = join(dir, 'package.json')
    // A package may load itself by name (Node's self-reference), as its own example config does.
    if (existsSync(own) && readName(own) === name) return dir
    const installed = join(dir, 'node_modules', ...name.split('/'))
    if (existsSync(join(installed, 'package.json'))) return installed
    if (dirname(dir) === dir) return undefined
  }
}

function readName(file: string): unknown {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name
  } catch {
    return undefined
  }
}

/** Node's own answer, or undefined: an ESM-only exports map, or a package that is not installed. */
function requireResolve(name: string, fromDir: string): string | undefined {
  try {
    return createRequire(join(resolve(fromDir), 'noop.js')).resolve(name)
  } catch {
    return undefined
  }
}

/**
 * The file a package name resolves to from `fromDir`, the way Node would import it. `require.resolve`
 * answers first; it cannot see an ESM-only package (an `exports` map with only an `import` condition),
 * so those are resolved here from the package's `exports` (conditions `import`, `node`, `default`) or
 * `main`. `conditions` are tried before those, and skip `require.resolve` (a monorepo's tests pass
 * their source condition). Throws when nothing is found.
 *
 * @example
 * resolvePackage('@acme/shallot-rate-limit', '/srv/agent') // '/srv/agent/node_modules/@acme/shallot-rate-limit/dist/index.js'
 */
export function resolvePackage(name: string, fromDir: string, conditions: readonly string[] = []): string {
  if (conditions.length === 0) {
    const file = requireResolve(name, fromDir)
    // A built-in comes back as its bare name, which an import would read as a file in the working directory.
    if (file !== undefined && !isAbsolute(file)) throw new Error(`${JSON.stringify(name)} is not a package on disk`)
    if (file !== undefined) return file
  }
  const dir = findPackageDir(name, fromDir)
  if (dir === undefined) throw new Error(`cannot find package "${name}" from ${resolve(fromDir)}`)
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports?: unknown; main?: unknown }
  const target =
    manifest.exports === undefined
      ? typeof manifest.main === 'string'
        ? manifest.main
        : 'index.js'
      : pickTarget(rootEntry(manifest.exports), [...conditions, ...ESM_CONDITIONS])
  if (target === undefined)
    throw new Error(`package "${name}" exports nothing under the conditions ${[...conditions, ...ESM_CONDITIONS].join(', ')}`)
  const file = join(dir, target)
  if (!existsSync(file)) throw new Error(`package "${name}" points to ${file}, which does not exist (is it built?)`)
  return file
}
