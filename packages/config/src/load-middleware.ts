import { pathToFileURL } from 'node:url'
import type { MiddlewareDefinition } from '@shallot/core'
import { isMiddlewareDefinition } from '@shallot/core/kit'
import { packageNameProblem } from './package-name.js'
import { resolvePackage } from './resolve-package.js'

/**
 * Why a package named in a config could not serve as a middleware.
 *
 * @example
 * await loadMiddleware('@acme/nope', dir).catch((err) => err.reason) // 'not_found'
 */
export class MiddlewareLoadError extends Error {
  override readonly name = 'MiddlewareLoadError'
  /**
   * `not_a_package`: a Node built-in, a path or a URL, never imported; `not_found`: nothing to import;
   * `failed`: importing threw; `no_definition`: it exports no definition.
   */
  readonly reason: 'not_a_package' | 'not_found' | 'failed' | 'no_definition'

  constructor(reason: MiddlewareLoadError['reason'], message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.reason = reason
  }
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  return text.split('\n')[0] ?? text
}

function definitionIn(module: Record<string, unknown>): MiddlewareDefinition | undefined {
  for (const candidate of [module.default, module.definition]) if (isMiddlewareDefinition(candidate)) return candidate
  // A CommonJS package built from ESM exposes its exports object as the default.
  const inner = module.default
  if (typeof inner === 'object' && inner !== null) {
    for (const candidate of [(inner as Record<string, unknown>).default, (inner as Record<string, unknown>).definition]) {
      if (isMiddlewareDefinition(candidate)) return candidate
    }
  }
  return undefined
}

/**
 * Imports the package `name` as seen from `fromDir` and returns its middleware definition: the
 * default export, or the export named `definition`, made with `defineMiddleware`. `name` is only
 * ever a package name (never a Node built-in, a path or a URL). Throws a
 * {@link MiddlewareLoadError} naming the package otherwise.
 *
 * @example
 * const definition = await loadMiddleware('@acme/shallot-rate-limit', dirname(configFile))
 */
export async function loadMiddleware(name: string, fromDir: string, conditions: readonly string[] = []): Promise<MiddlewareDefinition> {
  const problem = packageNameProblem(name)
  if (problem !== undefined) throw new MiddlewareLoadError('not_a_package', problem)
  let file: string
  try {
    file = resolvePackage(name, fromDir, conditions)
  } catch (err) {
    throw new MiddlewareLoadError('not_found', firstLine(err), { cause: err })
  }
  let module: Record<string, unknown>
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>
  } catch (err) {
    throw new MiddlewareLoadError('failed', `package "${name}" failed to load: ${firstLine(err)}`, { cause: err })
  }
  const definition = definitionIn(module)
  if (definition === undefined) {
    throw new MiddlewareLoadError(
      'no_definition',
      `package "${name}" exports no middleware definition: its default export (or an export named "definition") must be made with defineMiddleware()`,
    )
  }
  return definition
}
