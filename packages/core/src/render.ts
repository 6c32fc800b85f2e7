import type { ToolErrorJSON } from './errors.js'
import type { ToolCall } from './types.js'

/**
 * Turns a soft error into the text the model reads. `error` is already sanitized; `details` holds
 * the error's string, number and boolean details, strings sanitized too, for a renderer that wants
 * to show some of them (the default shows none).
 */
export type ErrorRenderer = (error: ToolErrorJSON, call: ToolCall, details: Readonly<Record<string, string | number | boolean>>) => string

/**
 * The default: compact JSON `{"error":code,"message":…,"hint":…}` (the soft-error wording of docs/errors.md), plus
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
