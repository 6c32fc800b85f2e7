import { toJsonSchema } from '@langchain/core/utils/json_schema'
import { z } from 'zod'

const anyObject = z.record(z.string(), z.unknown())

const isZod4 = (schema: unknown): schema is z.ZodType =>
  typeof schema === 'object' && schema !== null && '_zod' in schema && typeof (schema as { safeParse?: unknown }).safeParse === 'function'

/**
 * The zod schema shallot validates a LangChain tool's arguments with: a zod 4 schema as it is; a zod 3
 * schema or a JSON Schema through LangChain's `toJsonSchema` and zod's `z.fromJSONSchema`. What cannot
 * be converted accepts any JSON object (LangChain still validates with the tool's own schema).
 *
 * @example
 * inputSchemaOf(tool(fn, { name: 'search', schema: z.object({ q: z.string() }) }).schema)
 */
export function inputSchemaOf(schema: unknown): z.ZodType {
  if (isZod4(schema)) return schema
  if (typeof schema !== 'object' || schema === null) return anyObject
  try {
    const json = toJsonSchema(schema as Parameters<typeof toJsonSchema>[0])
    return z.fromJSONSchema(json as Parameters<typeof z.fromJSONSchema>[0])
  } catch {
    return anyObject
  }
}
