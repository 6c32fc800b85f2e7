import { defineMiddleware } from '@shallot/core'
import { scopeSchema } from '@shallot/core/kit'
import { z } from 'zod'
import { idempotency } from './idempotency.js'
import { idempotencyOptionsSchema } from './idempotency-options.js'
import type { IdempotencyStore } from './idempotency-store.js'

const { keyFrom, effects, ttlMs, leaseMs, waitMs, pollMs, reconcileAttempts, reconcileDelayMs, reconcileTimeoutMs } =
  idempotencyOptionsSchema.shape

/**
 * Idempotency as a config file writes it: `scope` is a string (a function cannot be written in a
 * file), and the store comes from the host (`env.stores.idempotency`).
 *
 * @example
 * idempotencyFileOptionsSchema.parse({ scope: 'tenant-42', ttlMs: 3_600_000 })
 */
export const idempotencyFileOptionsSchema = z.strictObject({
  keyFrom,
  effects,
  ttlMs,
  leaseMs,
  waitMs,
  pollMs,
  reconcileAttempts,
  reconcileDelayMs,
  reconcileTimeoutMs,
  scope: scopeSchema.optional(),
})

/**
 * `idempotency` as a middleware definition, for config files and registries. A host that keeps
 * records across reconfigurations passes its store as `env.stores.idempotency`.
 *
 * @example
 * const layer = idempotencyDefinition.build({ ttlMs: 3_600_000 }, { stores: { idempotency: sqliteStore({ path }) } })
 */
export const idempotencyDefinition = defineMiddleware({
  name: 'idempotency',
  description: 'One key per logical call: completed results replay, concurrent duplicates wait or are refused.',
  options: idempotencyFileOptionsSchema,
  create: (options, env) => {
    const store = (env.stores as { idempotency?: IdempotencyStore } | undefined)?.idempotency
    return idempotency(store === undefined ? options : { ...options, store })
  },
})
