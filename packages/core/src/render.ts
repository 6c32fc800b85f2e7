import type { ToolErrorJSON } from './errors.js'
import type { ToolCall } from './types.js'

/** Turns a soft error into the text the model reads. */
export type ErrorRenderer = (error: ToolErrorJSON, call: ToolCall) => string

/**
 * The default: compact JSON `{"error":code,"message":…,"hint":…}` as in the seeds, plus
 * `retryAfterMs` when the model should wait before trying again.
 *
 * @example
 * renderError({ code: 'not_found', message: 'file src/mian.rs not found', ... }, call)
 * // '{"error":"not_found","message":"file src/mian.rs not found"}'
 */
export const renderError: ErrorRenderer = (error) => {
  const body: Record<string, unknown> = { error: error.code, message: error.message }
  if (error.hint !== undefined) body.hint = error.hint
  if (error.retryAfterMs !== undefined) body.retryAfterMs = error.retryAfterMs
  return JSON.stringify(body)
}

/** Renders a successful value as text: strings as they are, anything else as JSON. Never throws. */
export function renderValue(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return ''
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    // Most likely a bigint somewhere; a replacer is slow, so only pay for it on this path.
    try {
      return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? String(value)
    } catch (err) {
      return `[unserializable output: ${(err as Error).message}]`
    }
  }
}

/** Cuts text over `max` characters, leaving a marker that says how much was cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text
  // Never cut between the two halves of a surrogate pair: a lone half is not valid Unicode.
  const code = text.charCodeAt(max - 1)
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max
  return `${text.slice(0, end)}\n… [output truncated: ${text.length - end} more characters]`
}
