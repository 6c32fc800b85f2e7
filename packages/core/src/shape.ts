import { z } from 'zod'

type JsonSchema = {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  additionalProperties?: JsonSchema | boolean
}

function format(schema: JsonSchema | undefined, depth: number): string {
  if (schema === undefined || depth > 4) return 'any'
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ')
  const union = schema.anyOf ?? schema.oneOf
  if (union) return union.map((s) => format(s, depth + 1)).join(' | ')
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type
  if (type === 'object' || schema.properties) {
    const required = new Set(schema.required ?? [])
    const fields = Object.entries(schema.properties ?? {}).map(
      ([key, value]) => `${key}${required.has(key) ? '' : '?'}: ${format(value, depth + 1)}`,
    )
    if (fields.length === 0 && typeof schema.additionalProperties === 'object') {
      return `{ [key: string]: ${format(schema.additionalProperties, depth + 1)} }`
    }
    return `{ ${fields.join(', ')} }`
  }
  if (type === 'array') return `${format(schema.items, depth + 1)}[]`
  if (type === 'integer') return 'integer'
  return type ?? 'any'
}

/** The JSON Schema of a tool's zod input, for model requests; `{}` when zod cannot express it. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>
  } catch {
    return {}
  }
}

/**
 * A one-line, TypeScript-like description of what a zod schema accepts, for hints:
 * `{ path: string, encoding?: "utf8" | "base64" }`.
 */
export function describeShape(schema: z.ZodType): string {
  return format(jsonSchemaOf(schema) as JsonSchema, 0)
}
