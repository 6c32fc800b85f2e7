import { z } from 'zod'
import type { PathKey } from './config-path.js'

/** The parts of a JSON Schema that words can say. */
export interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  additionalProperties?: JsonSchema | boolean
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  minLength?: number
  minItems?: number
  description?: string
}

const cache = new WeakMap<z.ZodType, JsonSchema>()

/** The input-side JSON Schema of a zod schema (`{}` where zod cannot say), computed once per schema. */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  let json = cache.get(schema)
  if (json === undefined) {
    try {
      json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema
    } catch {
      json = {}
    }
    cache.set(schema, json)
  }
  return json
}

/** The sub-schema that describes the value at `path`, when the schema says. */
export function schemaAt(schema: JsonSchema | undefined, path: readonly PathKey[]): JsonSchema | undefined {
  let node = schema
  for (const key of path) {
    if (node === undefined) return undefined
    const branches = node.anyOf ?? node.oneOf ?? node.allOf
    if (branches !== undefined) {
      node = branches.map((branch) => schemaAt(branch, [key])).find((found) => found !== undefined)
      continue
    }
    if (typeof key === 'number') node = node.items
    else node = node.properties?.[key] ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined)
  }
  return node
}

const SAFE = Number.MAX_SAFE_INTEGER

function range(schema: JsonSchema): string {
  const low = schema.exclusiveMinimum ?? schema.minimum
  const high = schema.exclusiveMaximum ?? schema.maximum
  const hasLow = low !== undefined && low > -SAFE
  const hasHigh = high !== undefined && high < SAFE
  if (hasLow && hasHigh && schema.exclusiveMinimum === undefined && schema.exclusiveMaximum === undefined) return ` from ${low} to ${high}`
  const parts: string[] = []
  if (hasLow) parts.push(`${schema.exclusiveMinimum === undefined ? '≥' : '>'} ${low}`)
  if (hasHigh) parts.push(`${schema.exclusiveMaximum === undefined ? '≤' : '<'} ${high}`)
  return parts.length === 0 ? '' : ` ${parts.join(' and ')}`
}

function quote(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : JSON.stringify(value)
}

/**
 * What a JSON Schema accepts, in words: `a number ≥ 0`, `a whole number from 1 to 6`, `one of 'read', 'write'`.
 * `undefined` when there is nothing useful to say.
 */
export function describeSchema(schema: JsonSchema | undefined, depth = 0): string | undefined {
  if (schema === undefined || depth > 3) return undefined
  // zod writes z.literal(Infinity) as { type: 'number', const: null }: JSON has no Infinity.
  if (schema.const === null && schema.type === 'number') return 'Infinity'
  if (schema.const !== undefined) return quote(schema.const)
  if (schema.enum !== undefined) return schema.enum.length === 1 ? quote(schema.enum[0]) : `one of ${schema.enum.map(quote).join(', ')}`
  const branches = schema.anyOf ?? schema.oneOf
  if (branches !== undefined) {
    const words = branches.map((branch) => describeSchema(branch, depth + 1)).filter((w): w is string => w !== undefined)
    return words.length === 0 ? undefined : [...new Set(words)].join(' or ')
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'integer':
      return `a whole number${range(schema)}`
    case 'number':
      return `a number${range(schema)}`
    case 'boolean':
      return 'true or false'
    case 'string':
      return schema.minLength !== undefined && schema.minLength > 0 ? 'a non-empty string' : 'a string'
    case 'array': {
      const item = describeSchema(schema.items, depth + 1)
      return item === undefined ? 'a list' : `a list, each ${item}`
    }
    case 'object': {
      const keys = Object.keys(schema.properties ?? {})
      return keys.length === 0 ? 'an object' : `an object with ${keys.slice(0, 8).join(', ')}${keys.length > 8 ? ', …' : ''}`
    }
    case 'null':
      return 'null'
    default:
      return undefined
  }
}
