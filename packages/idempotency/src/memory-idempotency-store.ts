import { systemClock } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { RawRecord } from './contract-parts.js'
import { flat } from './flat-string.js'
import type { BeginResult, StoredResult, SyncIdempotencyStore } from './idempotency-store.js'
import { MemoryRecords } from './memory-records.js'

/**
 * Options of {@link memoryIdempotencyStore}.
 *
 * @example
 * memoryIdempotencyStoreOptionsSchema.parse({ maxEntries: 1000 })
 */
export const memoryIdempotencyStoreOptionsSchema = z
  .object({
    /** Most records kept; past it the least recently used completed record goes (never one in flight or unknown). Default 10,000. */
    maxEntries: z.number().int().positive().default(10_000),
    /** Milliseconds for leases and TTLs. Default: the system's monotonic clock. Pass `clock.now` of a manual clock in tests. */
    now: z.custom<() => number>((v) => typeof v === 'function', 'must be a function () => number').optional(),
  })
  .strict()

export type MemoryIdempotencyStoreOptions = z.input<typeof memoryIdempotencyStoreOptionsSchema>

/** The in-process store: one process only, gone when the process ends. Every method answers synchronously. */
export interface MemoryIdempotencyStore extends SyncIdempotencyStore {
  /** Records held now, expired ones not yet dropped included. */
  readonly size: number
  /** Drops every record. */
  clear(): void
}

/** What `idempotency()` and the store contract reach a memory store by, beside its public methods. */
interface Internals {
  readonly completeText: CompleteWithText
  readonly writeRaw: (key: string, record: RawRecord) => void
}

// What idempotency() and the store contract reach in a store made here, beside its public methods.
const internals = new WeakMap<object, Internals>()

/** `complete` with the result's JSON text (`undefined` for no value) instead of the result. */
export type CompleteWithText = (key: string, token: string, json: string | undefined, ttlMs: number) => boolean

/**
 * For a store made by {@link memoryIdempotencyStore}: its `complete` taking the result's JSON text,
 * so a result `idempotency()` has serialised once is not parsed and serialised again; `undefined`
 * for any other store.
 *
 * @example
 * const complete = memoryCompleteWithText(store)
 * complete?.(storeKey, token, '{"chargeId":"ch_1"}', ttlMs)
 */
export function memoryCompleteWithText(store: object): CompleteWithText | undefined {
  return internals.get(store)?.completeText
}

/**
 * The store contract's hook for a memory store: plants `record` under `key` as it is, valid or
 * not, so the contract can check what the store answers for a corrupt record.
 *
 * @example
 * for (const c of idempotencyStoreContract((now) => { const store = memoryIdempotencyStore({ now }); return { store, writeRaw: memoryIdempotencyStoreRawWriter(store) } })) it(c.name, () => c.run())
 */
export function memoryIdempotencyStoreRawWriter(store: MemoryIdempotencyStore): (key: string, record: RawRecord) => void {
  const write = internals.get(store)?.writeRaw
  if (write === undefined) throw new TypeError('memoryIdempotencyStoreRawWriter() takes a store made by memoryIdempotencyStore()')
  return write
}

const parseStoreOptions = optionsParser('memoryIdempotencyStore()', memoryIdempotencyStoreOptionsSchema)

/**
 * An in-memory {@link IdempotencyStore}: bounded, TTL checked when a record is touched, no timer
 * per key. Only completed records are evicted to make room (least recently used first): a call in
 * flight or an unknown outcome is never evicted, since either would let an identical write run
 * again. When every record is one of those, `begin` fails closed (a `store_full` ToolError, which
 * `idempotency()` answers with a soft `store_unavailable`). Every record is validated when read.
 *
 * @example
 * const clock = manualClock()
 * const stack = createStack({ clock, tools, middleware: [idempotency({ store: memoryIdempotencyStore({ maxEntries: 1000, now: clock.now }) })] })
 */
export function memoryIdempotencyStore(options?: MemoryIdempotencyStoreOptions): MemoryIdempotencyStore {
  const { maxEntries, now = systemClock.now } = parseStoreOptions(options)
  const records = new MemoryRecords(maxEntries)
  const store: MemoryIdempotencyStore = {
    begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
      const answer = records.claim(key, argsHash, leaseMs, ttlMs, now())
      return typeof answer === 'string' ? { status: 'new', token: answer } : answer
    },
    complete(key: string, token: string, result: StoredResult, ttlMs: number): boolean {
      return records.complete(key, token, ttlMs, JSON.stringify(result), now())
    },
    release(key: string, token: string): boolean {
      return records.release(key, token, now())
    },
    markUnknown(key: string, token: string, ttlMs: number): boolean {
      return records.markUnknown(key, token, ttlMs, now())
    },
    reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined {
      return records.reclaim(key, argsHash, leaseMs, ttlMs, now())
    },
    get size() {
      return records.size
    },
    clear() {
      records.clear()
    },
  }
  internals.set(store, {
    completeText: (key, token, json, ttlMs) =>
      records.complete(key, token, ttlMs, json === undefined ? '{}' : flat(`{"value":${json}}`), now()),
    writeRaw: (key, raw) => records.writeRaw(key, raw),
  })
  return store
}
