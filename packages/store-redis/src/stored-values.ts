import { z } from 'zod'

/** A breaker state as JSON read back from Redis (unknown fields are dropped). */
export const breakerStateSchema = z.object({
  circuit: z.enum(['closed', 'open', 'half-open']),
  generation: z.number().int().min(0),
  counts: z.json(),
  failures: z.number().int().min(0),
  openedAt: z.number(),
  openMs: z.number().min(0),
  opens: z.number().int().min(0),
  probes: z.array(z.tuple([z.number().int().min(0), z.number()])),
  seq: z.number().int().min(0),
})

/** The reply of the `begin` script. */
export const beginReplySchema = z.union([
  z.tuple([z.literal('new'), z.string()]),
  z.tuple([z.literal('done'), z.string()]),
  z.tuple([z.literal('corrupt'), z.string()]),
  z.tuple([z.literal('in_flight')]),
  z.tuple([z.literal('mismatch')]),
  z.tuple([z.literal('unknown'), z.enum(['recorded', 'lease_expired'])]),
])

/** The reply of the breaker read script: state JSON (or ''), version, Redis's now, a problem (or ''). */
export const breakerReadReplySchema = z.tuple([z.string(), z.string(), z.string().transform(Number).pipe(z.number()), z.string()])

/** The reply of the budget scripts: [taken, corrupt]. */
export const budgetReplySchema = z.tuple([z.union([z.literal(0), z.literal(1)]), z.union([z.literal(0), z.literal(1)])])

/** A 0 or 1 integer reply. */
export const flagReplySchema = z.union([z.literal(0), z.literal(1)])

/**
 * Parses JSON text against `schema`: the value, or `undefined` (with the reason) when the text is
 * not JSON or not that shape. Values read back from Redis are never trusted.
 *
 * @example
 * const parsed = parseStored(breakerStateSchema, raw)
 */
export function parseStored<S extends z.ZodType>(schema: S, text: string): { value: z.output<S> } | { problem: string } {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { problem: 'not JSON' }
  }
  let parsed: z.ZodSafeParseResult<z.output<S>>
  try {
    parsed = schema.safeParse(json)
  } catch {
    // A value nested deep enough overflows the stack of a recursive schema: not a shape this store writes.
    return { problem: 'nested too deep' }
  }
  if (parsed.success) return { value: parsed.data }
  return { problem: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') }
}
