import type { Json } from '@shallot/core'

/** A value, or a promise of it: in-memory stores answer at once, networked stores (Redis) later. */
export type Awaitable<T> = T | Promise<T>

/** What a store keeps of a successful call: only what a replay needs, as plain JSON. Never the arguments. */
export interface StoredResult {
  /** The tool's return value as JSON; absent when the tool returned `undefined`. */
  readonly value?: Json
}

/**
 * The answer to {@link IdempotencyStore.begin}.
 * - `new`: nobody holds the key; the caller owns it now and must `complete`, `release` or `markUnknown` with `token`.
 * - `done`: an earlier identical call succeeded; replay `result`.
 * - `in_flight`: another worker holds a live lease on the key.
 * - `mismatch`: the key was used with different arguments.
 * - `unknown`: an earlier call may or may not have reached the world: its failure was recorded as
 *   `recorded`, its worker's lease ran out before it reported back (`lease_expired`), or the record
 *   the store read back is not well-formed (`corrupt`, with the `problem` for the log). A corrupt
 *   record is never replayed, replaced or handed out as `new`: it answers `corrupt` until it expires
 *   or someone removes it.
 */
export type BeginResult =
  | { readonly status: 'new'; readonly token: string }
  | { readonly status: 'done'; readonly result: StoredResult }
  | { readonly status: 'in_flight' }
  | { readonly status: 'mismatch' }
  | { readonly status: 'unknown'; readonly reason: 'recorded' | 'lease_expired' }
  | { readonly status: 'unknown'; readonly reason: 'corrupt'; readonly problem: string }

/**
 * The atomic protocol behind `idempotency()`, with fencing tokens: only the token `begin` handed out
 * can settle a record, and a stale token (its record released, expired or replaced) can settle nothing.
 * Each method must be atomic with respect to every other caller of the same store, in any process
 * that shares it. The store owns time (leases and TTLs); see each implementation for which clock.
 * A store validates every record it reads back (`parseStoredResult` checks the stored result) and
 * answers `corrupt` for one that is not well-formed.
 *
 * @example
 * const begun = await store.begin('tenant-a 4f1c…', argsHash, 120_000, 86_400_000)
 * if (begun.status === 'new') {
 *   const value = await chargeCard(args)
 *   await store.complete('tenant-a 4f1c…', begun.token, { value }, 86_400_000)
 * }
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for a call whose arguments hash to `argsHash`, with a lease of `leaseMs`. A new
   * record is kept `leaseMs + ttlMs` at most, so a crashed worker's record still reads `unknown`
   * for a full TTL after its lease ran out.
   */
  begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): Awaitable<BeginResult>
  /** Stores the success for `ttlMs`. False when `token` no longer owns a pending record. */
  complete(key: string, token: string, result: StoredResult, ttlMs: number): Awaitable<boolean>
  /** Deletes the record: nothing reached the world, so the next identical call runs. False when `token` is stale. */
  release(key: string, token: string): Awaitable<boolean>
  /** Records that the outcome is unknown for `ttlMs`: identical calls are refused. False when `token` is stale. */
  markUnknown(key: string, token: string, ttlMs: number): Awaitable<boolean>
  /**
   * Optional: takes over a record whose outcome is unknown, so its owner can find out what happened
   * (reconcile) and settle it. Atomically, only for a live, well-formed record of `argsHash` that
   * `begin` would answer `unknown (recorded)` or `unknown (lease_expired)` (never `corrupt`): the
   * record becomes pending again under a new token with a lease of `leaseMs`, kept `leaseMs + ttlMs`
   * at most, and the token is returned; any earlier token is fenced out. Any other record, or none:
   * `undefined`, and nothing changes. A store without it keeps refusing identical calls after an
   * unknown outcome.
   */
  reclaim?(key: string, argsHash: string, leaseMs: number, ttlMs: number): Awaitable<string | undefined>
}

/**
 * A store whose every method answers synchronously (the memory and SQLite stores), so callers that
 * hold one need no `await`.
 *
 * @example
 * const begun = memoryIdempotencyStore().begin('key', 'hash', 60_000, 86_400_000) // a BeginResult, not a promise
 */
export interface SyncIdempotencyStore extends IdempotencyStore {
  begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult
  complete(key: string, token: string, result: StoredResult, ttlMs: number): boolean
  release(key: string, token: string): boolean
  markUnknown(key: string, token: string, ttlMs: number): boolean
  reclaim?(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined
}

/**
 * True for anything that has the four protocol methods.
 *
 * @example
 * if (!isIdempotencyStore(candidate)) throw new TypeError('not an idempotency store')
 */
export function isIdempotencyStore(value: unknown): value is IdempotencyStore {
  if (typeof value !== 'object' || value === null) return false
  const store = value as Record<string, unknown>
  return (
    typeof store.begin === 'function' &&
    typeof store.complete === 'function' &&
    typeof store.release === 'function' &&
    typeof store.markUnknown === 'function'
  )
}
