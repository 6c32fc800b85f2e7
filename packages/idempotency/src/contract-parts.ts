import type { Awaitable, IdempotencyStore } from './idempotency-store.js'

// What the store contract's files share.

export const LEASE = 1_000
export const TTL = 60_000

/**
 * One record as the contract plants it, in the contract's terms; a store's `writeRaw` maps each
 * field to its own storage **without validating anything**: the point is to plant what a bug, a
 * bad migration or another writer could leave behind. A field left out is absent (SQL `NULL`, a
 * missing hash field). Strings are written as they are; numbers as numbers, or as `String(n)`
 * where the storage (or the column) cannot hold that number (`NaN` becomes `'NaN'`); other values
 * as their `String()`.
 */
export interface RawRecord {
  /** The arguments hash `begin` was given. */
  readonly argsHash?: unknown
  /** `'pending'`, `'done'` or `'unknown'` when well-formed; map these names to your own codes. */
  readonly state?: unknown
  /** The fencing token `begin` handed out. */
  readonly token?: unknown
  /** End of the lease, in milliseconds on the store's clock (the `now` the factory got). */
  readonly leaseUntil?: unknown
  /** When the record expires, same clock. */
  readonly expiresAt?: unknown
  /** A done record's stored result, as JSON text (`{"value":…}`). */
  readonly result?: unknown
}

/** Plants a raw record (see {@link RawRecord}); fails the case when the store test gave no hook. */
export type WriteRaw = (key: string, record: RawRecord) => Awaitable<void>

/** Registers one contract case. */
export type Contract = (name: string, body: (store: IdempotencyStore, clock: { t: number }, writeRaw: WriteRaw) => Promise<void>) => void
