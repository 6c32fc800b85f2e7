import { parseOptions, systemClock } from '@shallot/core'
import { z } from 'zod'
import type { BeginResult, StoredResult, SyncIdempotencyStore } from './idempotency-store.js'

/**
 * Options of {@link memoryStore}.
 *
 * @example
 * memoryStoreOptionsSchema.parse({ maxEntries: 1000 })
 */
export const memoryStoreOptionsSchema = z
  .object({
    /** Most records kept; past it the least recently used settled record goes. Default 10,000. */
    maxEntries: z.number().int().positive().default(10_000),
    /** Milliseconds for leases and TTLs. Default: the system's monotonic clock. Pass `clock.now` of a manual clock in tests. */
    now: z.custom<() => number>((v) => typeof v === 'function', 'must be a function () => number').optional(),
  })
  .strict()

export type MemoryStoreOptions = z.input<typeof memoryStoreOptionsSchema>

/** The in-process store: one process only, gone when the process ends. Every method answers synchronously. */
export interface MemoryStore extends SyncIdempotencyStore {
  /** Records held now, expired ones not yet dropped included. */
  readonly size: number
  /** Drops every record. */
  clear(): void
}

interface Entry {
  readonly argsHash: string
  state: 'pending' | 'done' | 'unknown'
  readonly token: string
  readonly leaseUntil: number
  expiresAt: number
  /** JSON text, so a replay can never share objects with the caller that stored it. */
  result: string | undefined
}

/**
 * An in-memory {@link IdempotencyStore}: bounded (least recently used first, plus TTL), expired
 * records dropped when touched, no timer per key. A record whose lease is still live is never
 * evicted, so the bound can be exceeded by at most the number of calls in flight.
 *
 * @example
 * const clock = manualClock()
 * const stack = createStack({ clock, tools, middleware: [idempotency({ store: memoryStore({ maxEntries: 1000, now: clock.now }) })] })
 */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  const { maxEntries, now = systemClock.now } = parseOptions('memoryStore()', memoryStoreOptionsSchema, options)
  const entries = new Map<string, Entry>()
  let tokens = 0

  function live(key: string, at: number): Entry | undefined {
    const entry = entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= at) {
      entries.delete(key)
      return undefined
    }
    entries.delete(key)
    entries.set(key, entry)
    return entry
  }

  function makeRoom(at: number): void {
    // Map iterates oldest first: that is the LRU order.
    for (const [key, entry] of entries) {
      if (entries.size < maxEntries) return
      if (entry.state === 'pending' && entry.leaseUntil > at && entry.expiresAt > at) continue
      entries.delete(key)
    }
  }

  function owned(key: string, token: string, at: number): Entry | undefined {
    const entry = live(key, at)
    return entry !== undefined && entry.token === token && entry.state === 'pending' ? entry : undefined
  }

  return {
    begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
      const at = now()
      const entry = live(key, at)
      if (entry === undefined) {
        makeRoom(at)
        const token = `m${++tokens}`
        entries.set(key, {
          argsHash,
          state: 'pending',
          token,
          leaseUntil: at + leaseMs,
          expiresAt: at + leaseMs + ttlMs,
          result: undefined,
        })
        return { status: 'new', token }
      }
      if (entry.argsHash !== argsHash) return { status: 'mismatch' }
      if (entry.state === 'done') return { status: 'done', result: entry.result === undefined ? {} : JSON.parse(entry.result) }
      if (entry.state === 'unknown') return { status: 'unknown', reason: 'recorded' }
      return entry.leaseUntil > at ? { status: 'in_flight' } : { status: 'unknown', reason: 'lease_expired' }
    },
    complete(key: string, token: string, result: StoredResult, ttlMs: number): boolean {
      const at = now()
      const entry = owned(key, token, at)
      if (entry === undefined) return false
      entry.state = 'done'
      entry.result = JSON.stringify(result)
      entry.expiresAt = at + ttlMs
      return true
    },
    release(key: string, token: string): boolean {
      if (owned(key, token, now()) === undefined) return false
      entries.delete(key)
      return true
    },
    markUnknown(key: string, token: string, ttlMs: number): boolean {
      const at = now()
      const entry = owned(key, token, at)
      if (entry === undefined) return false
      entry.state = 'unknown'
      entry.expiresAt = at + ttlMs
      return true
    },
    get size() {
      return entries.size
    },
    clear() {
      entries.clear()
    },
  }
}
