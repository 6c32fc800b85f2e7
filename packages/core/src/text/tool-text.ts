import { stripInvisibleAndControls } from './invisible.js'
import { cutPoint, truncateFrom } from './truncate.js'

/** The caps of the tool text a model reads, in characters. */
export const TOOL_TEXT_LIMITS = Object.freeze({
  /** A tool's description. */
  description: 4096,
  /** One string inside an input schema: a property's name or description, an enum value, a pattern. */
  schemaString: 1024,
  /** The whole input schema, counted as its strings plus two per value. */
  schema: 65_536,
  /** The deepest nesting of an input schema. */
  schemaDepth: 32,
})

/** What a model is shown instead of an input schema that is too large, too deep or not plain JSON. */
const OMITTED = Object.freeze({
  type: 'object',
  description: `The input schema was not sent: over ${TOOL_TEXT_LIMITS.schema} characters, nested over ${TOOL_TEXT_LIMITS.schemaDepth} levels, or not plain JSON.`,
})

function clean(text: string, max: number): string {
  // Cut before stripping so the work is bounded by the cap, not by the input (a 5 MB description).
  const window = max * 2 + 1024
  const cut = text.length > window
  const visible = stripInvisibleAndControls(cut ? text.slice(0, cutPoint(text, window)) : text)
  return truncateFrom(visible, max, text.length, cut)
}

/**
 * A tool's description as a model may read it: bidi controls, zero-width and Unicode tag
 * characters, ANSI escapes and C0 controls other than tab and newline removed, capped at
 * {@link TOOL_TEXT_LIMITS}`.description` with the truncation marker. Not redacted: a description is
 * the tool author's, and an e-mail address or a host in it is usually what the tool is about.
 * Anything but a string is `''`.
 *
 * @example
 * toolDescription('Reads a file\u{E0049}\u{E0067}\u200B') // 'Reads a file'
 */
export function toolDescription(text: unknown): string {
  return typeof text === 'string' ? clean(text, TOOL_TEXT_LIMITS.description) : ''
}

/** Thrown inside the walk when the schema is over a cap; caught by {@link toolInputSchema}. */
class OverCap extends Error {}

/** The walk's state: the characters left in the budget. */
interface Budget {
  left: number
}

function spend(budget: Budget, by: number): void {
  budget.left -= by
  if (budget.left < 0) throw new OverCap()
}

function copy(value: unknown, depth: number, budget: Budget): unknown {
  spend(budget, 2)
  if (typeof value === 'string') {
    const text = clean(value, TOOL_TEXT_LIMITS.schemaString)
    spend(budget, text.length)
    return text
  }
  if (value === null || typeof value === 'boolean') return value
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  // What JSON.stringify leaves out is left out; a bigint, which it refuses, is refused.
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined
  if (typeof value !== 'object' || depth >= TOOL_TEXT_LIMITS.schemaDepth) throw new OverCap()
  if (Array.isArray(value)) {
    const length = value.length
    const out: unknown[] = []
    for (let i = 0; i < length; i++) out.push(copy(value[i], depth + 1, budget) ?? null)
    return out
  }
  const out: Record<string, unknown> = {}
  for (const rawKey of Object.keys(value)) {
    const key = clean(rawKey, TOOL_TEXT_LIMITS.schemaString)
    spend(budget, key.length)
    // A key that would set the copy's prototype is not a schema word; it is left out.
    if (key === '__proto__') continue
    const item = copy((value as Record<string, unknown>)[rawKey], depth + 1, budget)
    if (item !== undefined) out[key] = item
  }
  return out
}

/**
 * A tool's input schema (JSON Schema) as a model may read it: a plain-JSON copy whose every string
 * and key is cleaned like {@link toolDescription} and capped at {@link TOOL_TEXT_LIMITS}`.schemaString`.
 * A schema over the whole-schema cap, nested too deeply, cyclic, or not plain JSON (a function, a
 * getter that throws, a revoked Proxy) becomes `{ type: 'object' }` with a note saying so: the model
 * can still call the tool, and the stack still validates the arguments with the real schema.
 *
 * @example
 * toolInputSchema({ type: 'object', properties: { path: { type: 'string', description: 'a path\u202E' } } })
 * // { type: 'object', properties: { path: { type: 'string', description: 'a path' } } }
 */
export function toolInputSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { ...OMITTED }
  try {
    return copy(schema, 0, { left: TOOL_TEXT_LIMITS.schema }) as Record<string, unknown>
  } catch {
    // Over a cap, or the schema threw while being read: either way nothing of it is sent.
    return { ...OMITTED }
  }
}
