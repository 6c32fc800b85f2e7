import { systemClock, ToolError } from '@shallot/core'
import { optionsParser } from '@shallot/core/internal'
import { z } from 'zod'
import type { RawRecord } from './contract-parts.js'
import { flat, ownCopy } from './flat-string.js'
import type { BeginResult, StoredResult, SyncIdempotencyStore } from './idempotency-store.js'
import { parseStoredResult } from './stored-result.js'

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

/**
 * One record. A done record is also a node of the recency list (least recently used at `head`, most
 * recently at `tail`): one object per record, whatever its state, so the records a busy store keeps
 * cost the garbage collector as little as they can. A full store reuses the record it evicts for
 * the one it admits (see `admit`), so in the steady state a write allocates no record at all.
 */
interface Entry {
  key: string
  argsHash: string
  state: 'pending' | 'done' | 'unknown'
  /** The fencing token while pending; {@link SETTLED} once done or unknown, since only a pending record can be settled. */
  token: string
  leaseUntil: number
  expiresAt: number
  /** JSON text, so a replay can never share objects with the caller that stored it. */
  result: string | undefined
  /** Links of the recency list; set only while the record is done. */
  older: Entry | undefined
  newer: Entry | undefined
}

const STATES: ReadonlySet<unknown> = new Set(['pending', 'done', 'unknown'])

/** The token of a settled record: never handed out (tokens count from `m1`), so a record kept for hours keeps no token string of its own. */
const SETTLED = 'm0'

const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

/**
 * The moment `ms` after `at`, in whole milliseconds rounded up: a lease or a record lasts at most
 * 1 ms longer than asked, and on the default clock its times are small integers, which V8 keeps in
 * the record itself instead of in a number object of their own that the collector must copy.
 */
const until = (at: number, ms: number): number => Math.ceil(at + ms)

// Records are only ever written by this file, except through the contract's raw hook below; they
// are checked on every read all the same, so the store's answers never rest on an unchecked record.
function entryProblem(entry: Entry): string | undefined {
  if (typeof entry !== 'object' || entry === null) return 'record is not an object'
  if (typeof entry.argsHash !== 'string' || entry.argsHash === '') return 'argsHash is not a non-empty string'
  if (!STATES.has(entry.state)) return `state is not pending, done or unknown`
  if (typeof entry.token !== 'string' || !/^m[0-9]+$/.test(entry.token)) return 'token is not a token this store hands out'
  if (!isTime(entry.leaseUntil)) return 'leaseUntil is not a finite number'
  if (!isTime(entry.expiresAt)) return 'expiresAt is not a finite number'
  if (entry.state !== 'done' && entry.result !== undefined) return `a ${entry.state} record holds a result`
  return undefined
}

const rawWriters = new WeakMap<object, (key: string, record: RawRecord) => void>()

/** `complete` with the result's JSON text (`undefined` for no value) instead of the result. */
export type CompleteWithText = (key: string, token: string, json: string | undefined, ttlMs: number) => boolean

const textCompleters = new WeakMap<object, CompleteWithText>()

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
  return textCompleters.get(store)
}

/**
 * The store contract's hook for a memory store: plants `record` under `key` as it is, valid or
 * not, so the contract can check what the store answers for a corrupt record.
 *
 * @example
 * for (const c of idempotencyStoreContract((now) => { const store = memoryIdempotencyStore({ now }); return { store, writeRaw: memoryIdempotencyStoreRawWriter(store) } })) it(c.name, () => c.run())
 */
export function memoryIdempotencyStoreRawWriter(store: MemoryIdempotencyStore): (key: string, record: RawRecord) => void {
  const write = rawWriters.get(store)
  if (write === undefined) throw new TypeError('memoryIdempotencyStoreRawWriter() takes a store made by memoryIdempotencyStore()')
  return write
}

/**
 * Thrown by `begin` when every record of a memory store is a call in flight or an unknown outcome:
 * those are never evicted (either would let an identical write run again), so the store fails
 * closed. `idempotency()` answers the call with a soft `store_unavailable`; the tool does not run.
 */
function storeFull(maxEntries: number): ToolError {
  return new ToolError(
    'store_full',
    `memoryIdempotencyStore() holds ${maxEntries} records, all calls in flight or outcomes unknown, which are never evicted; no new key can be claimed`,
    {
      category: 'transient',
      retryable: true,
      safeToRepeat: true,
      hint: 'raise maxEntries, or use a durable store (sqliteStore, redisStores) for this many writes',
      details: { maxEntries },
    },
  )
}

// No options (what idempotency() gives its default store) are parsed once; any options at every call.
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
  // One Map holds every record. The done ones, which may be evicted, are also linked in recency
  // order, so a use and an eviction are each O(1) whatever the Map's holes; a record in flight or an
  // unknown outcome is never linked, so it is never evicted, only dropped once expired. A record is
  // linked exactly while its state is `done`: only `complete` (and the contract's raw hook) makes one.
  const records = new Map<string, Entry>()
  let head: Entry | undefined
  let tail: Entry | undefined
  let tokens = 0
  // The record `begin` admitted last, while it is pending and in the map: settling it (most often
  // the very next call on the store) needs no lookup. Cleared whenever it is settled or dropped.
  let admitted: Entry | undefined

  const expired = (entry: Entry, at: number) => isTime(entry.expiresAt) && entry.expiresAt <= at

  function unlink(entry: Entry): void {
    if (entry.older === undefined) head = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === undefined) tail = entry.older
    else entry.newer.older = entry.older
    entry.older = undefined
    entry.newer = undefined
  }

  function append(entry: Entry): void {
    entry.older = tail
    entry.newer = undefined
    if (tail === undefined) head = entry
    else tail.newer = entry
    tail = entry
  }

  function drop(key: string, entry: Entry): void {
    if (entry.state === 'done') unlink(entry)
    else if (entry === admitted) admitted = undefined
    records.delete(key)
  }

  function live(key: string, at: number): Entry | undefined {
    const entry = records.get(key)
    if (entry === undefined) return undefined
    if (expired(entry, at)) {
      drop(key, entry)
      return undefined
    }
    if (entry.state === 'done' && entry !== tail) {
      unlink(entry)
      append(entry)
    }
    return entry
  }

  /**
   * Makes room for one more record: the evicted record (the least recently used done one), which
   * nothing refers to any more, or `undefined` when none had to go.
   */
  function makeRoom(at: number): Entry | undefined {
    let evicted: Entry | undefined
    while (records.size >= maxEntries && head !== undefined) {
      evicted = head
      drop(head.key, head)
    }
    if (records.size < maxEntries) return evicted
    // Only records that may not be evicted are left: drop the expired ones, wherever they sit.
    for (const [key, entry] of records) if (expired(entry, at)) drop(key, entry)
    if (records.size >= maxEntries) throw storeFull(maxEntries)
    return evicted
  }

  /**
   * A pending record for `key`, in the object the store just evicted when there is one: a record
   * lives for thousands of calls, so a new object per record would be copied by the garbage
   * collector twice before it settles in the old generation, and the evicted one is already there.
   */
  function admit(key: string, argsHash: string, token: string, at: number, leaseMs: number, ttlMs: number): void {
    const evicted = makeRoom(at)
    const flatKey = flat(key)
    const own = ownCopy(argsHash)
    if (evicted === undefined) {
      const entry: Entry = {
        key: flatKey,
        argsHash: own,
        state: 'pending',
        token,
        leaseUntil: until(at, leaseMs),
        expiresAt: until(at, leaseMs + ttlMs),
        result: undefined,
        older: undefined,
        newer: undefined,
      }
      records.set(flatKey, entry)
      admitted = entry
      return
    }
    // Unlinked by its eviction (older and newer are undefined) and no longer in the map.
    evicted.key = flatKey
    evicted.argsHash = own
    evicted.state = 'pending'
    evicted.token = token
    evicted.leaseUntil = until(at, leaseMs)
    evicted.expiresAt = until(at, leaseMs + ttlMs)
    evicted.result = undefined
    records.set(flatKey, evicted)
    admitted = evicted
  }

  /** The pending record under `key` if `token` owns it (and it has not expired), which is being settled: no longer {@link admitted}. */
  function owned(key: string, token: string, at: number): Entry | undefined {
    const last = admitted
    let entry: Entry | undefined
    if (last !== undefined && last.token === token && last.key === key) {
      if (expired(last, at)) {
        drop(key, last)
        return undefined
      }
      entry = last
    } else entry = live(key, at)
    if (entry === undefined || entry.token !== token || entry.state !== 'pending') return undefined
    if (entry === admitted) admitted = undefined
    return entry
  }

  // `text` is a whole StoredResult's JSON.
  function completeText(key: string, token: string, text: string, ttlMs: number): boolean {
    const at = now()
    const entry = owned(key, token, at)
    if (entry === undefined) return false
    entry.state = 'done'
    entry.token = SETTLED
    entry.result = flat(text)
    entry.expiresAt = until(at, ttlMs)
    append(entry)
    return true
  }

  const store: MemoryIdempotencyStore = {
    begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
      const at = now()
      const entry = live(key, at)
      if (entry === undefined) {
        const token = `m${tokens + 1}`
        admit(key, argsHash, token, at, leaseMs, ttlMs)
        tokens++
        return { status: 'new', token }
      }
      const problem = entryProblem(entry)
      if (problem !== undefined) return { status: 'unknown', reason: 'corrupt', problem }
      if (entry.argsHash !== argsHash) return { status: 'mismatch' }
      if (entry.state === 'done') {
        const parsed = parseStoredResult(entry.result)
        return 'result' in parsed
          ? { status: 'done', result: parsed.result }
          : { status: 'unknown', reason: 'corrupt', problem: parsed.problem }
      }
      if (entry.state === 'unknown') return { status: 'unknown', reason: 'recorded' }
      return entry.leaseUntil > at ? { status: 'in_flight' } : { status: 'unknown', reason: 'lease_expired' }
    },
    complete(key: string, token: string, result: StoredResult, ttlMs: number): boolean {
      return completeText(key, token, JSON.stringify(result), ttlMs)
    },
    release(key: string, token: string): boolean {
      if (owned(key, token, now()) === undefined) return false
      records.delete(key)
      return true
    },
    markUnknown(key: string, token: string, ttlMs: number): boolean {
      const at = now()
      const entry = owned(key, token, at)
      if (entry === undefined) return false
      entry.state = 'unknown'
      entry.token = SETTLED
      entry.expiresAt = until(at, ttlMs)
      return true
    },
    get size() {
      return records.size
    },
    clear() {
      records.clear()
      head = undefined
      tail = undefined
      admitted = undefined
    },
  }
  textCompleters.set(store, (key, token, json, ttlMs) => completeText(key, token, json === undefined ? '{}' : `{"value":${json}}`, ttlMs))
  rawWriters.set(store, (key, record) => {
    const known = records.get(key)
    if (known !== undefined) drop(key, known)
    // Planted as it is, field by field (an absent field reads as undefined). Only a record that reads
    // as done is linked, so only it may be evicted; anything else might be an unknown outcome.
    const entry = {
      key,
      argsHash: record.argsHash,
      state: record.state,
      token: record.token,
      leaseUntil: record.leaseUntil,
      expiresAt: record.expiresAt,
      result: record.result,
      older: undefined,
      newer: undefined,
    } as unknown as Entry
    records.set(key, entry)
    if (entry.state === 'done') append(entry)
  })
  return store
}

/**
 * The old name of {@link memoryIdempotencyStore}.
 *
 * @deprecated Use `memoryIdempotencyStore()`; this alias goes in the next minor version.
 * @example
 * const store = memoryStore({ maxEntries: 1000 }) // same as memoryIdempotencyStore({ maxEntries: 1000 })
 */
export const memoryStore: typeof memoryIdempotencyStore = memoryIdempotencyStore

/** @deprecated Use `MemoryIdempotencyStore`; this alias goes in the next minor version. */
export type MemoryStore = MemoryIdempotencyStore

/** @deprecated Use `MemoryIdempotencyStoreOptions`; this alias goes in the next minor version. */
export type MemoryStoreOptions = MemoryIdempotencyStoreOptions
