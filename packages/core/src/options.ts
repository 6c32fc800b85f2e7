import type { z } from 'zod'

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

/**
 * Validates constructor options once, with zod, and throws an {@link OptionsError} that names
 * each bad option, the value received and what is allowed.
 *
 * @example
 * const { ms } = parseOptions('timeout()', timeoutOptionsSchema, options)
 */
export function parseOptions<S extends z.ZodType>(owner: string, schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input ?? {})
  if (parsed.success) return parsed.data
  throw new OptionsError(
    owner,
    parsed.error.issues.map((issue) => ({
      path: issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join(''),
      // An unknown key's issue sits on the enclosing object: printing that whole object says nothing the key does not.
      message: issue.code === 'unrecognized_keys' ? issue.message : `${issue.message}${received(input, issue.path)}`,
    })),
  )
}
