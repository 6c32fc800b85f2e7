import type { Json } from '@shallot/core'
import { z } from 'zod'

/**
 * Why `value` is not plain JSON as the stores write it, or `undefined` when it is: only null,
 * booleans, finite numbers, strings, arrays and plain objects, and no `__proto__` key anywhere
 * (JSON.parse keeps one as an own key, and code that merges the value would pollute a prototype).
 * Walks with an explicit stack, so no depth overflows it.
 *
 * @example
 * jsonProblem(JSON.parse('{"__proto__": {"admin": true}}')) // 'forbidden key "__proto__" at (root)'
 */
export function jsonProblem(value: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[value, '(root)']]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [v, path] = next
    if (v === null || typeof v === 'boolean' || typeof v === 'string') continue
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `non-finite number at ${path}`
      continue
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}[${i}]`])
      continue
    }
    if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return `not JSON at ${path}`
    for (const key of Object.keys(v)) {
      if (key === '__proto__') return `forbidden key "__proto__" at ${path}`
      stack.push([(v as Record<string, unknown>)[key], `${path}.${key}`])
    }
  }
  return undefined
}

/** Any JSON value; {@link parseStored} has checked it with {@link jsonProblem} before the schema runs. */
export const jsonValue = z.custom<Json>(() => true)

/** A bigint column read as text: a safe integer. */
const integerText = z
  .string()
  .regex(/^-?\d{1,16}$/, 'must be an integer')
  .transform(Number)
  .pipe(z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER))

/** The server's `now` of a statement. */
export const nowSchema = integerText

/** An idempotency row as `begin` reads it (every column as text). */
export const idempotencyRowSchema = z.object({
  args_hash: z.string().min(1),
  state: z.enum(['pending', 'done', 'unknown', 'lapsed']),
  token: z.string().regex(/^[1-9]\d{0,18}$/, 'must be a positive integer'),
  lease_until: integerText,
  expires_at: integerText,
  result: z.string().nullable(),
})

/** A breaker state as stored (unknown fields are dropped, so a newer breaker's extra field is not corruption). */
export const breakerStateSchema = z.object({
  circuit: z.enum(['closed', 'open', 'half-open']),
  generation: z.number().int().min(0),
  counts: jsonValue,
  failures: z.number().int().min(0),
  openedAt: z.number(),
  openMs: z.number().min(0),
  opens: z.number().int().min(0),
  probes: z.array(z.tuple([z.number().int().min(0), z.number()])),
  seq: z.number().int().min(0),
})

/** Tokens spent from a retry budget: a finite, non-negative number. */
export const spentSchema = z.number().finite().min(0)

/**
 * Parses JSON text read back from the database against `schema`: the value, or the reason it is
 * corrupt (not JSON, not plain JSON, or not that shape). Stored values are never trusted.
 *
 * @example
 * const parsed = parseStored(runSnapshotSchema, row.snapshot)
 * if ('problem' in parsed) log.warn({ problem: parsed.problem }, 'corrupt')
 */
export function parseStored<S extends z.ZodType>(schema: S, text: string): { value: z.output<S> } | { problem: string } {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { problem: 'not JSON' }
  }
  const problem = jsonProblem(json)
  if (problem !== undefined) return { problem }
  return checked(schema, json)
}

/**
 * Checks an already-parsed value against `schema`: the value, or the issues as one line.
 *
 * @example
 * const row = checked(idempotencyRowSchema, result.rows[0])
 */
export function checked<S extends z.ZodType>(schema: S, value: unknown): { value: z.output<S> } | { problem: string } {
  const parsed = schema.safeParse(value)
  if (parsed.success) return { value: parsed.data }
  return { problem: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') }
}
