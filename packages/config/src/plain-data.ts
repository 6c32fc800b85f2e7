import { ConfigError, type ConfigIssue } from './config-error.js'
import type { PathKey } from './config-path.js'
import { makeIssue } from './describe-issue.js'
import { MAX_DEPTH } from './limits.js'

const noLines = () => undefined

function kindOf(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return undefined
    case 'object':
      if (value === null || Array.isArray(value)) return undefined
      {
        const proto = Object.getPrototypeOf(value)
        if (proto === Object.prototype || proto === null) return undefined
        const name = (proto as { constructor?: { name?: unknown } }).constructor?.name
        return typeof name === 'string' && name !== '' && name !== 'Object'
          ? `a ${name}`
          : 'an object with a prototype of its own (was "__proto__" written as a key?)'
      }
    default:
      return `a ${typeof value}`
  }
}

/**
 * A copy of a config given as an object, made without recursion: plain objects, lists, strings,
 * numbers, booleans and null only, at most 64 levels deep. Anything else (a function, a class
 * instance, an object whose prototype was set with `__proto__`) is a {@link ConfigError} listing every such place.
 */
export function plainData(input: unknown): unknown {
  const issues: ConfigIssue[] = []
  const bad = (path: readonly PathKey[], message: string, hint?: string) => {
    issues.push(makeIssue(path, noLines, { message, hint }))
  }
  const copyOf = (value: unknown): unknown => (Array.isArray(value) ? [] : typeof value === 'object' && value !== null ? {} : value)
  const root = copyOf(input)
  const jobs: Array<{ from: unknown; to: unknown; path: PathKey[] }> = [{ from: input, to: root, path: [] }]
  const rootKind = kindOf(input)
  if (rootKind !== undefined) bad([], `must be plain data (objects, lists, strings, numbers, booleans, null), not ${rootKind}`)
  for (let job = jobs.pop(); job !== undefined && rootKind === undefined; job = jobs.pop()) {
    const { from, to, path } = job
    if (typeof from !== 'object' || from === null) continue
    if (path.length >= MAX_DEPTH) {
      bad(path, `nested more than ${MAX_DEPTH} levels deep (or it contains itself)`)
      continue
    }
    const keys: PathKey[] = Array.isArray(from) ? from.map((_, i) => i) : Object.keys(from)
    for (const key of keys) {
      const value = (from as Record<PathKey, unknown>)[key]
      const at = [...path, key]
      if (key === '__proto__') {
        bad(at, 'a key named "__proto__"', 'JavaScript reads this key as the object prototype; rename it')
        continue
      }
      const kind = kindOf(value)
      if (kind !== undefined) {
        bad(at, `must be plain data (objects, lists, strings, numbers, booleans, null), not ${kind}`)
        continue
      }
      const copy = copyOf(value)
      if (Array.isArray(to)) to.push(copy)
      else (to as Record<string, unknown>)[key as string] = copy
      if (copy !== value) jobs.push({ from: value, to: copy, path: at })
    }
  }
  if (issues.length > 0) throw new ConfigError(undefined, issues)
  return root
}
