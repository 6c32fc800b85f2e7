import { z } from 'zod'

/** Any JSON object: what a tool accepts when its JSON Schema cannot be converted. The server still validates. */
const anyObject = z.record(z.string(), z.unknown())

/**
 * The zod schema that validates an MCP tool's arguments, converted from its JSON Schema with zod's
 * own `z.fromJSONSchema`. What zod 4.6 cannot convert (an external `$ref`, `if`/`then`/`else`,
 * `dependentRequired`/`dependentSchemas`, unknown types) falls back to "any JSON object", and the
 * server's own validation answers instead (as a soft `invalid_arguments`).
 *
 * @example
 * inputSchemaFromJson({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }).parse({ path: 'a' })
 */
export function inputSchemaFromJson(schema: unknown): z.ZodType {
  if (typeof schema !== 'object' || schema === null) return anyObject
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0])
  } catch {
    return anyObject
  }
}
