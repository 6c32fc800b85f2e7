import { systemClock, ToolError } from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
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
 * One record, as `begin` reads it. Records planted by the contract's raw hook are kept field by
 * field as given, valid or not, which is why every field is checked when read.
 */
interface Entry {
  argsHash: string
  state: 'pending' | 'done' | 'unknown'
  /** The fencing token while pending; {@link SETTLED} once done or unknown, since only a pending record can be settled. */
  token: string
  leaseUntil: number
  expiresAt: number
  /** JSON text, so a replay can never share objects with the caller that stored it. */
  result: string | undefined
  /** The key it is held under, so eviction can drop the record it finds at the end of the recency list. */
  key: string
  /** Its neighbours in the recency list while it is done (only done records are listed); `null` otherwise. */
  older: Entry | null
  newer: Entry | null
}

/** A record to fill in, of the one shape every record has. */
function blank(): Entry {
  return { argsHash: '', state: 'pending', token: '', leaseUntil: 0, expiresAt: 0, result: undefined, key: '', older: null, newer: null }
}

const STATES: ReadonlySet<unknown> = new Set(['pending', 'done', 'unknown'])

/** The token of a settled record: never handed out (tokens count from `m1`). */
const SETTLED = 'm0'

const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

/**
 * The moment `ms` after `at`, in whole milliseconds rounded up: a lease or a record lasts at most
 * 1 ms longer than asked.
 */
const until = (at: number, ms: number): number => Math.ceil(at + ms)

/** A record whose expiry is not a finite number (only a planted one can be) never expires. */
const expired = (entry: Entry, at: number): boolean => isTime(entry.expiresAt) && entry.expiresAt <= at

// Every record is checked when begin reads it, so the store's answers never rest on an unchecked
// record, planted or not.
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

/** What `begin` answers for a live record. */
function answerFor(entry: Entry, argsHash: string, at: number): BeginResult {
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
}

/** What `idempotency()` and the store contract reach a memory store by, beside its public methods. */
interface Internals {
  readonly claim: BeginForToken
  readonly completeText: CompleteWithText
  readonly now: () => number
  readonly writeRaw: (key: string, record: RawRecord) => void
}

// One entry per store: a store built per run (a simulation's, a test's) costs the collector one ephemeron, not four.
const internals = new WeakMap<object, Internals>()

/**
 * `complete` with the result's JSON text (`undefined` for no value) instead of the result; `at`,
 * when given, is a reading of the store's own clock (see {@link memoryStoreClock}) just taken.
 */
export type CompleteWithText = (key: string, token: string, json: string | undefined, ttlMs: number, at?: number) => boolean

/** `begin` answering a claimed key with its token alone (a string) instead of `{ status: 'new', token }`. */
export type BeginForToken = (key: string, argsHash: string, leaseMs: number, ttlMs: number) => string | BeginResult

/**
 * For a store made by {@link memoryIdempotencyStore}: its `begin` answering a new claim with the
 * token string itself, so the answer nearly every write gets is no object to build and check;
 * `undefined` for any other store.
 *
 * @example
 * const answer = memoryBeginForToken(store)?.(storeKey, argsHash, leaseMs, ttlMs)
 * if (typeof answer === 'string') token = answer
 */
export function memoryBeginForToken(store: object): BeginForToken | undefined {
  return internals.get(store)?.claim
}

/**
 * For a store made by {@link memoryIdempotencyStore}: the clock it reads (its `now` option, or the
 * system's), so a caller reading the same clock can hand it a reading it has anyway; `undefined`
 * for any other store.
 *
 * @example
 * const at = memoryStoreClock(store) === ctx.clock.now ? ctx.clock.now() : undefined
 */
export function memoryStoreClock(store: object): (() => number) | undefined {
  return internals.get(store)?.now
}

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
  // A Map keeps any string as a key, `__proto__` included, and never reads a prototype.
  const records = new Map<string, Entry>()
  // The done records, which alone may be evicted, linked through their `older` and `newer`, least
  // recently used first. (A Map in order of use made eviction O(n): a Map keeps a deleted key's slot
  // until it is rebuilt, and iterating from the front for the oldest key stepped over all of them.)
  let oldest: Entry | null = null
  let newest: Entry | null = null
  let tokens = 0

  const listed = (entry: Entry): boolean => entry.older !== null || oldest === entry

  function unlink(entry: Entry): void {
    if (entry.older === null) oldest = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === null) newest = entry.older
    else entry.newer.older = entry.older
    entry.older = null
    entry.newer = null
  }

  /** Lists `entry` (not listed now) as the most recently used done record. */
  function link(entry: Entry): void {
    entry.older = newest
    if (newest === null) oldest = entry
    else newest.newer = entry
    newest = entry
  }

  function drop(entry: Entry): void {
    records.delete(entry.key)
    if (listed(entry)) unlink(entry)
  }

  /** The record of `key` if it has not expired (an expired one is dropped), marked as just used. */
  function live(key: string, at: number): Entry | undefined {
    const entry = records.get(key)
    if (entry === undefined) return undefined
    if (expired(entry, at)) {
      drop(entry)
      return undefined
    }
    if (entry !== newest && listed(entry)) {
      unlink(entry)
      link(entry)
    }
    return entry
  }

  /** The pending record under `key` if `token` owns it and it has not expired. */
  function owned(key: string, token: string, at: number): Entry | undefined {
    const entry = live(key, at)
    return entry !== undefined && entry.state === 'pending' && entry.token === token ? entry : undefined
  }

  /**
   * Makes room for one more record: least recently used done records first, then expired ones wherever
   * they are. Answers a done record it evicted for the new one to reuse: a full store allocates no record.
   */
  function makeRoom(at: number): Entry | undefined {
    let evicted: Entry | undefined
    while (records.size >= maxEntries && oldest !== null) {
      evicted = oldest
      drop(oldest)
    }
    if (records.size < maxEntries) return evicted
    for (const entry of records.values()) if (expired(entry, at)) drop(entry)
    if (records.size >= maxEntries) throw storeFull(maxEntries)
    return undefined
  }

  /** The token of a new claim of `key`, or what `begin` answers for the live record under it. */
  function claim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | BeginResult {
    const at = now()
    const held = live(key, at)
    if (held !== undefined) return answerFor(held, argsHash, at)
    const entry = makeRoom(at) ?? blank()
    const token = `m${++tokens}`
    entry.key = key
    entry.argsHash = ownCopy(argsHash) // not a slice holding its whole digest for as long as the record lives
    entry.state = 'pending'
    entry.token = token
    entry.leaseUntil = until(at, leaseMs)
    entry.expiresAt = until(at, leaseMs + ttlMs)
    entry.result = undefined
    records.set(key, entry)
    return token
  }

  /** Settles a pending record as done with `result` (a StoredResult's JSON text, or `undefined` as planted). */
  function completeText(key: string, token: string, ttlMs: number, result: string | undefined, at = now()): boolean {
    const entry = owned(key, token, at)
    if (entry === undefined) return false
    entry.state = 'done'
    entry.token = SETTLED
    entry.expiresAt = until(at, ttlMs)
    entry.result = result
    link(entry)
    return true
  }

  const store: MemoryIdempotencyStore = {
    begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
      const answer = claim(key, argsHash, leaseMs, ttlMs)
      return typeof answer === 'string' ? { status: 'new', token: answer } : answer
    },
    complete(key: string, token: string, result: StoredResult, ttlMs: number): boolean {
      return completeText(key, token, ttlMs, JSON.stringify(result))
    },
    release(key: string, token: string): boolean {
      const entry = owned(key, token, now())
      if (entry === undefined) return false
      drop(entry)
      return true
    },
    markUnknown(key: string, token: string, ttlMs: number): boolean {
      const at = now()
      const entry = owned(key, token, at)
      if (entry === undefined) return false
      Object.assign(entry, { state: 'unknown', token: SETTLED, expiresAt: until(at, ttlMs) })
      return true
    },
    reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined {
      const at = now()
      const entry = live(key, at)
      if (entry === undefined) return undefined
      const answer = answerFor(entry, argsHash, at)
      if (answer.status !== 'unknown' || answer.reason === 'corrupt') return undefined
      // Pending again under a new token: any earlier token is fenced out.
      const token = `m${++tokens}`
      Object.assign(entry, { state: 'pending', token, leaseUntil: until(at, leaseMs), expiresAt: until(at, leaseMs + ttlMs) })
      return token
    },
    get size() {
      return records.size
    },
    clear() {
      records.clear()
      oldest = null
      newest = null
    },
  }
  internals.set(store, {
    claim,
    completeText: (key, token, json, ttlMs, given) =>
      completeText(key, token, ttlMs, json === undefined ? '{}' : flat(`{"value":${json}}`), isTime(given) ? given : now()),
    now,
    writeRaw: (key, raw) => {
      const previous = records.get(key)
      if (previous !== undefined) drop(previous)
      // Planted as it is, field by field (an absent field reads as undefined), without making room, as
      // a bug or another writer would. Only a record that reads as done may be evicted; anything else
      // might be an unknown outcome.
      const { argsHash, state, token, leaseUntil, expiresAt, result } = raw
      const entry: Entry = Object.assign(blank(), { argsHash, state, token, leaseUntil, expiresAt, result, key })
      records.set(key, entry)
      if (state === 'done') link(entry)
    },
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
