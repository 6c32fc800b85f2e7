import type { ToolContext, ToolEffect, ToolError } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import type { ReconcileLimits } from './ask-reconciler.js'
import { type IdempotencyOptions, idempotencyOptionsSchema } from './idempotency-options.js'
import type { IdempotencyStore, StoredResult } from './idempotency-store.js'
import { memoryCompleteWithText, memoryIdempotencyStore } from './memory-idempotency-store.js'
import { type SharedCalls, sharedCalls } from './shared-calls.js'
import { stackScopes } from './stack-scopes.js'

const parseIdempotencyOptions = optionsParser('idempotency()', idempotencyOptionsSchema)

/** What every call of one `idempotency()` layer shares: its checked options and its store, read once. */
export interface Layer {
  readonly opts: ReturnType<typeof parseIdempotencyOptions>
  readonly store: IdempotencyStore
  /** The calls in flight in this process, by store key. */
  readonly calls: SharedCalls
  /** The memory store takes the result as the text serialised by the layer; any other store gets it as JSON values. */
  readonly completeText: ReturnType<typeof memoryCompleteWithText>
  /** The scope the store sees: the layer's own store is kept apart by stack; a store the host passes is shared as given. */
  readonly scopeInStore: (ctx: ToolContext, scope: string) => string
  readonly ttlMs: number
  readonly leaseMs: number
  readonly waitMs: number
  readonly pollMs: number
  /** A reconciliation ends within half the lease, so the record is still the caller's when it settles. */
  readonly limits: ReconcileLimits
  /** A store without reclaim keeps refusing an identical call after an unknown outcome. */
  readonly canReclaim: boolean
}

export function idempotencyLayer(options: IdempotencyOptions | undefined): Layer {
  const opts = parseIdempotencyOptions(options)
  const store = opts.store ?? memoryIdempotencyStore()
  const { ttlMs, leaseMs, waitMs, pollMs } = opts
  return {
    opts,
    store,
    calls: sharedCalls(store),
    completeText: memoryCompleteWithText(store),
    scopeInStore: opts.store === undefined ? stackScopes() : (_ctx: ToolContext, scope: string) => scope,
    ttlMs,
    leaseMs,
    waitMs,
    pollMs,
    limits: {
      attempts: opts.reconcileAttempts,
      delayMs: opts.reconcileDelayMs,
      timeoutMs: opts.reconcileTimeoutMs,
      withinMs: leaseMs / 2,
    },
    canReclaim: typeof store.reclaim === 'function',
  }
}

/** One guarded call, as this layer tracks it. */
export interface Guarded {
  readonly tool: string
  readonly effect: ToolEffect
  readonly key: string
  readonly storeKey: string
  readonly argsHash: string
  /** The tool has a `reconcile` to ask after an unknown outcome. */
  readonly reconcilable: boolean
}

/** What claiming a key gave when the earlier call's outcome is unknown and the tool can reconcile it: take the record over and ask. */
export class Reclaim {
  constructor(readonly reason: 'recorded' | 'lease_expired') {}
}

/**
 * What claiming a key gave: the token that settles the record (a string: the call owns the key
 * now), the stored success to replay, or an unknown outcome to reconcile.
 */
export type Claimed = string | StoredResult | Reclaim

export const isPromise = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | null)?.then === 'function'

export function refuse(ctx: ToolContext, call: Pick<Guarded, 'key'> | undefined, error: ToolError): ToolError {
  ctx.emit('idempotency.refused', { key: call?.key, code: error.code })
  ctx.log.info({ key: call?.key, code: error.code }, 'idempotency refused a call')
  return error
}

export function replay(ctx: ToolContext, call: Guarded, value: unknown, from: 'store' | 'in_process'): void {
  ctx.result = { value, replayed: true }
  ctx.emit('idempotency.replayed', { key: call.key, from })
  ctx.log.info({ key: call.key, from }, 'replayed a stored result instead of running the tool')
}

export function storeFailed(ctx: ToolContext, call: Guarded, op: string, err: unknown): void {
  ctx.emit('idempotency.store_error', { key: call.key, op })
  ctx.log.warn({ key: call.key, op, err }, 'idempotency store failed')
}
