import { sanitize } from '@shallot/core'

/** What the model reads when a thrown value carries no readable text. */
export const UNKNOWN_PAYLOAD = '(unknown payload)'

/** A thrown value, read without ever throwing. */
export interface PanicDescription {
  /** The readable text of the thrown value for the model, cleaned of control characters and stack-frame lines; not yet capped. */
  readonly message: string
  /** The error's name when it says something (`TypeError`, `QuotaError`); `undefined` for plain `Error` and non-errors. */
  readonly name: string | undefined
  /** `typeof` the thrown value, with `null` and `error` told apart: for logs. */
  readonly payload: string
  /** The stack trace, for the log only. */
  readonly stack: string | undefined
  /** The `cause` chain, outermost first, at most {@link MAX_CAUSES} entries (then `…`), for the log only. */
  readonly causes: readonly string[]
}

export const MAX_CAUSES = 8
const MAX_AGGREGATED = 3
const MAX_LOG_TEXT = 8000

/** Reads a property; a throwing getter or Proxy trap reads as `undefined`. */
function read(value: object, key: PropertyKey): unknown {
  try {
    return (value as Record<PropertyKey, unknown>)[key]
  } catch {
    return undefined
  }
}

function isError(value: object): boolean {
  try {
    return value instanceof Error
  } catch {
    return false
  }
}

function readString(value: object, key: PropertyKey): string | undefined {
  const text = read(value, key)
  return typeof text === 'string' && text.trim() !== '' ? text : undefined
}

/** The name worth showing: an Error subclass's name, or an error-looking name on a plain object. */
function nameOf(value: object): string | undefined {
  const name = readString(value, 'name')
  if (name === undefined || name === 'Error') return undefined
  return isError(value) || /(?:Error|Exception)$/.test(name) ? name : undefined
}

/** The text a thrown value carries, without its name; `undefined` when there is none. */
function textOf(value: unknown): string | undefined {
  try {
    switch (typeof value) {
      case 'string':
        return value.trim() === '' ? undefined : value
      case 'number':
      case 'boolean':
        return String(value)
      case 'bigint':
        return `${value}n`
      case 'symbol':
        return value.toString()
      case 'object':
        return value === null ? undefined : readString(value, 'message')
      default:
        // undefined, and functions: a function's source is never shown.
        return undefined
    }
  } catch {
    return undefined
  }
}

/** `Name: message`, or the message, or `(unknown payload)`. */
function headline(value: unknown): string {
  const text = textOf(value)
  if (text === undefined) return UNKNOWN_PAYLOAD
  const name = typeof value === 'object' && value !== null ? nameOf(value) : undefined
  return name === undefined || text.startsWith(`${name}:`) ? text : `${name}: ${text}`
}

/** `(3 errors: a; b; c)` for an AggregateError-like `errors` array, at most three of them spelled out. */
function aggregated(value: object): string {
  const errors = read(value, 'errors')
  let list: unknown[]
  let count: number
  try {
    if (!Array.isArray(errors) || errors.length === 0) return ''
    count = errors.length
    list = errors.slice(0, MAX_AGGREGATED)
  } catch {
    return ''
  }
  const more = count > MAX_AGGREGATED ? '; …' : ''
  return ` (${count} error${count === 1 ? '' : 's'}: ${list.map(headline).join('; ')}${more})`
}

/**
 * Cleans text for the model with core's sanitizer (invisible and control characters, stack-frame
 * lines, secrets). Only about `window` characters are looked at, so a megabyte message costs no more
 * than a short one; a longer text ends with the truncation marker.
 */
export function cleanText(text: string, window: number): string {
  return sanitize(text, { maxLength: window }).trim()
}

function causesOf(value: unknown): string[] {
  const causes: string[] = []
  const seen = new Set<unknown>([value])
  let current = value
  for (;;) {
    if (typeof current !== 'object' || current === null) break
    const cause = read(current, 'cause')
    if (cause === undefined || seen.has(cause)) break
    if (causes.length === MAX_CAUSES) {
      causes.push('…')
      break
    }
    seen.add(cause)
    causes.push(cleanText(headline(cause), MAX_LOG_TEXT))
    current = cause
  }
  return causes
}

/**
 * Reads anything that was thrown (an Error, a string, `null`, a Proxy whose every trap throws, a
 * 10,000-deep `cause` chain) and never throws itself. The message is what the model may read:
 * the name when it says something, the message, an AggregateError's first errors; a value with no
 * readable text gives `(unknown payload)`. The stack and the cause chain are for the log.
 *
 * @example
 * describePanic(new TypeError("Cannot read properties of undefined (reading 'id')")).message
 * // "TypeError: Cannot read properties of undefined (reading 'id')"
 * describePanic(null).message // '(unknown payload)'
 */
export function describePanic(thrown: unknown, window = 4000): PanicDescription {
  const isObject = typeof thrown === 'object' && thrown !== null
  const name = isObject ? nameOf(thrown) : undefined
  const text = headline(thrown)
  const extra = isObject && text !== UNKNOWN_PAYLOAD ? aggregated(thrown) : ''
  const stack = isObject ? readString(thrown, 'stack') : undefined
  return {
    message: cleanText(`${text}${extra}`, window) || UNKNOWN_PAYLOAD,
    name,
    payload: thrown === null ? 'null' : isObject && isError(thrown) ? 'error' : typeof thrown,
    stack: stack === undefined ? undefined : stack.slice(0, MAX_LOG_TEXT),
    causes: causesOf(thrown),
  }
}
