import { isBuiltin } from 'node:module'
import { MIDDLEWARE_NAME } from './config-schema.js'

const MAX_NAME = 214

/**
 * Why a stack entry cannot be imported as a middleware package, or `undefined` when it can. A name
 * is only ever a package name: a Node built-in (`fs`, `node:child_process`) is refused, since Node
 * hands its name back unresolved and importing that would load a file of the same name from the
 * working directory; a path, URL or subpath is refused before anything is resolved.
 *
 * @example
 * packageNameProblem('child_process') // '"child_process" is a Node built-in module, not a middleware package'
 * packageNameProblem('@acme/shallot-rate-limit') // undefined
 */
export function packageNameProblem(name: string): string | undefined {
  if (isBuiltin(name)) return `${JSON.stringify(name)} is a Node built-in module, not a middleware package`
  if (name.length > MAX_NAME || !MIDDLEWARE_NAME.test(name))
    return `${JSON.stringify(name.slice(0, MAX_NAME))} is not a package name (a path, URL or subpath is never imported from a config)`
  return undefined
}
