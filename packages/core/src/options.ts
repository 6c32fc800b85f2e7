import type { z } from 'zod'
import { closest } from './suggest.js'

/** Bad options given to a shallot constructor: names the option, the value it got and what is allowed. */
export class OptionsError extends TypeError {
  override readonly name = 'OptionsError'
  readonly code = 'invalid_options'
  /** Each problem: the option's path (`cooldown.maxMs`) and the message. */
  readonly issues: ReadonlyArray<{ path: string; message: string }>

  constructor(owner: string, issues: ReadonlyArray<{ path: string; message: string }>) {
    super(`${owner}: ${issues.map((i) => (i.path ? `option ${i.path}: ${i.message}` : i.message)).join('; ')}`)
    this.issues = issues
  }
}

function received(input: unknown, path: readonly PropertyKey[]): string {
  let value: unknown = input
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return ''
    value = (value as Record<PropertyKey, unknown>)[key]
  }
  if (value === undefined) return ''
  let text: string
  try {
    text =
      typeof value === 'function'
        ? 'a function'
        : typeof value === 'number' && !Number.isFinite(value)
          ? String(value)
          : (JSON.stringify(value) ?? String(value))
  } catch {
    text = String(value)
  }
  return ` (got ${text.length > 60 ? `${text.slice(0, 60)}…` : text})`
}

interface SchemaDef {
  type?: string
  shape?: Record<string, { _zod?: { def?: SchemaDef } }>
  innerType?: { _zod?: { def?: SchemaDef } }
  in?: { _zod?: { def?: SchemaDef } }
  valueType?: { _zod?: { def?: SchemaDef } }
  element?: { _zod?: { def?: SchemaDef } }
  options?: ReadonlyArray<{ _zod?: { def?: SchemaDef } }>
  getter?: () => { _zod?: { def?: SchemaDef } }
}

const defOf = (schema: { _zod?: { def?: SchemaDef } } | undefined): SchemaDef | undefined => schema?._zod?.def

/** The keys an object schema at `path` accepts, looking through wrappers, records, arrays and unions. */
function knownKeys(schema: unknown, path: readonly PropertyKey[]): string[] {
  let defs: SchemaDef[] = [defOf(schema as { _zod?: { def?: SchemaDef } })].filter((d): d is SchemaDef => d !== undefined)
  const unwrap = (def: SchemaDef, seen = 0): SchemaDef[] => {
    if (seen > 20) return []
    const inner = def.innerType ?? def.in ?? def.getter?.()
    if (inner !== undefined && def.type !== 'object') {
      const d = defOf(inner)
      return d === undefined ? [] : unwrap(d, seen + 1)
    }
    if (def.type === 'union' && def.options) return def.options.flatMap((o) => (defOf(o) ? unwrap(defOf(o) as SchemaDef, seen + 1) : []))
    return [def]
  }
  for (const key of path) {
    defs = defs
      .flatMap((d) => unwrap(d))
      .flatMap((def) => {
        const next =
          def.type === 'object'
            ? def.shape?.[String(key)]
            : def.type === 'record'
              ? def.valueType
              : def.type === 'array'
                ? def.element
                : undefined
        const d = defOf(next)
        return d === undefined ? [] : [d]
      })
  }
  const keys = new Set<string>()
  for (const def of defs.flatMap((d) => unwrap(d))) if (def.type === 'object') for (const k of Object.keys(def.shape ?? {})) keys.add(k)
  return [...keys]
}

/** `candidate`'s letters appear in `input` in order, starting with the same one: `ms` in `millis`. */
function abbreviates(candidate: string, input: string): boolean {
  const a = candidate.toLowerCase()
  const b = input.toLowerCase()
  if (a.length < 2 || a[0] !== b[0]) return false
  let i = 0
  for (const ch of b) if (ch === a[i]) i++
  return i === a.length
}

/** The accepted key a misspelt one most likely meant: the nearest by edit distance, else the one key it abbreviates or spells out. */
function suggestKey(key: string, known: readonly string[]): string | undefined {
  const near = closest(key, known)
  if (near !== undefined) return near
  const spelled = known.filter((k) => abbreviates(k, key) || abbreviates(key, k))
  return spelled.length === 1 ? spelled[0] : undefined
}

const pathText = (path: readonly PropertyKey[]) =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('')
/**
 * Validates constructor options once, with zod, and throws an {@link OptionsError} that names
 * each bad option, the value received and what is allowed; a misspelt key gets the nearest
 * accepted one (`timeout(): unknown option "millis"; did you mean 'ms'?`).
 *
 * @example
 * const { ms } = parseOptions('timeout()', timeoutOptionsSchema, options)
 */
export function parseOptions<S extends z.ZodType>(owner: string, schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input ?? {})
  if (parsed.success) return parsed.data
  const issues: Array<{ path: string; message: string }> = []
  // A misspelt key also leaves the key it meant missing; the suggestion says all there is to say about both.
  const meant = new Set<string>()
  for (const issue of parsed.error.issues) {
    if (issue.code !== 'unrecognized_keys') continue
    const known = knownKeys(schema, issue.path)
    for (const key of issue.keys) {
      const guess = suggestKey(key, known)
      if (guess !== undefined) meant.add(pathText([...issue.path, guess]))
      issues.push({
        path: pathText(issue.path),
        message:
          guess !== undefined
            ? `unknown option "${key}"; did you mean '${guess}'?`
            : known.length > 0
              ? `unknown option "${key}"; known options: ${known.join(', ')}`
              : `unknown option "${key}"`,
      })
    }
  }
  const others = parsed.error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') return []
    const path = pathText(issue.path)
    if (meant.has(path) && received(input, issue.path) === '') return []
    return [{ path, message: `${issue.message}${received(input, issue.path)}` }]
  })
  throw new OptionsError(owner, [...others, ...issues])
}
