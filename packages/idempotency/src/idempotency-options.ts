import { TOOL_EFFECTS, type ToolContext } from '@shallot/core'
import { scopeSchema } from '@shallot/core/kit'
import { z } from 'zod'
import { type IdempotencyStore, isIdempotencyStore } from './idempotency-store.js'

const DAY_MS = 24 * 60 * 60 * 1000
const isFunction = (value: unknown) => typeof value === 'function'

/** Computes a call's idempotency key from its context and its arguments (already validated by the tool's schema). */
export type KeyFunction = (ctx: ToolContext, args: unknown) => string
/** Computes a call's scope (for example its tenant) from its context. */
export type ScopeFunction = (ctx: ToolContext) => string

/**
 * Options of `idempotency()`; every field is optional. Exported for config loaders that validate ahead of time.
 *
 * @example
 * idempotencyOptionsSchema.parse({ scope: 'tenant-a', keyFrom: 'orderRef' })
 */
export const idempotencyOptionsSchema = z
  .object({
    /** Where records live. Default: a fresh `memoryIdempotencyStore()` (one process). Use `sqliteStore()` to survive restarts. */
    store: z
      .custom<IdempotencyStore>(isIdempotencyStore, 'must be a store with begin, complete, release and markUnknown methods')
      .optional(),
    /** Part of every stored key (a tenant, an environment): one scope never sees another's results. Default `'default'`. */
    scope: z.union([scopeSchema, z.custom<ScopeFunction>(isFunction)]).default('default'),
    /** Computes the key. Default: a hash of scope, run id, tool name and canonical arguments. */
    key: z.custom<KeyFunction>(isFunction, 'must be a function (ctx, args) => string').optional(),
    /** Takes the key from this top-level argument (the model supplies it). */
    keyFrom: z.string().min(1).optional(),
    /** Which tools are guarded, by effect. Default `['write', 'idempotent']`; reads pass through. */
    effects: z.array(z.enum(TOOL_EFFECTS)).min(1).default(['write', 'idempotent']),
    /** How long a result (or an unknown outcome) is kept. Default 24 hours. */
    ttlMs: z.number().int().positive().default(DAY_MS),
    /** How long a worker owns a key before a silent worker counts as crashed. Longer than the slowest call. Default 2 minutes. */
    leaseMs: z.number().int().positive().default(120_000),
    /** How long a duplicate waits for an identical call running in another process before a soft `conflict`. Default 10 s. */
    waitMs: z.number().int().nonnegative().default(10_000),
    /** How often that wait asks the store again. Default 250 ms. */
    pollMs: z.number().int().positive().default(250),
    /** For a tool with `reconcile`: how many times to ask it after an unknown outcome before giving up. Default 3. */
    reconcileAttempts: z.number().int().min(1).max(10).default(3),
    /** The wait before the second question, doubled before each further one. Default 1 s. */
    reconcileDelayMs: z.number().int().nonnegative().default(1000),
    /** How long one question may take before it counts as unknown. Default 10 s. */
    reconcileTimeoutMs: z.number().int().positive().default(10_000),
  })
  .strict()
  .refine((o) => o.key === undefined || o.keyFrom === undefined, { message: 'give key or keyFrom, not both', path: ['keyFrom'] })

export type IdempotencyOptions = z.input<typeof idempotencyOptionsSchema>
