import { z } from 'zod'
import { isLinearPattern } from './linear-pattern.js'

/** Any JSON object: what a tool accepts when its JSON Schema cannot be converted. The server still validates. */
const anyObject = z.record(z.string(), z.unknown())

/** Keywords whose values are data, not schemas: a `pattern` key inside them is a value to keep. */
const DATA = new Set(['const', 'enum', 'default', 'examples'])
/** Deeper than this, a server's schema is not converted. */
const MAX_DEPTH = 64

class Unconvertible extends Error {}

/**
 * A copy of a server's schema without the regular expressions that could backtrack for seconds on a
 * short argument (`^(a+)+$`): an unsafe `pattern` is left out; an unsafe `patternProperties` key
 * makes the schema unconvertible, since leaving it out would move its properties elsewhere.
 */
function linearPatternsOnly(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (depth > MAX_DEPTH) throw new Unconvertible()
  if (Array.isArray(value)) return value.map((item) => linearPatternsOnly(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    if (key === '__proto__') continue
    if (key === 'pattern' && typeof item === 'string' && !isLinearPattern(item)) continue
    if (key === 'patternProperties' && typeof item === 'object' && item !== null) {
      if (!Object.keys(item).every(isLinearPattern)) throw new Unconvertible()
    }
    out[key] = DATA.has(key) ? item : linearPatternsOnly(item, depth + 1)
  }
  return out
}

/**
 * The zod schema that validates an MCP tool's arguments, converted from its JSON Schema with zod's
 * own `z.fromJSONSchema`. A server's regular expressions run only when they are linear (see
 * {@link isLinearPattern}); others are left to the server. What zod 4.6 cannot convert (an external
 * `$ref`, `if`/`then`/`else`, `dependentRequired`/`dependentSchemas`, unknown types), a schema nested
 * over 64 levels, or a `patternProperties` key that is not linear, falls back to "any JSON object",
 * and the server's own validation answers instead (as a soft `invalid_arguments`).
 *
 * @example
 * inputSchemaFromJson({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }).parse({ path: 'a' })
 */
export function inputSchemaFromJson(schema: unknown): z.ZodType {
  if (typeof schema !== 'object' || schema === null) return anyObject
  try {
    const guarded = linearPatternsOnly(schema, 0)
    return z.fromJSONSchema(guarded as Parameters<typeof z.fromJSONSchema>[0])
  } catch {
    return anyObject
  }
}
