import { ToolError } from '@shallot/core'
import type { RawRecord } from './contract-parts.js'
import { ownCopy } from './flat-string.js'
import type { BeginResult } from './idempotency-store.js'
import { parseStoredResult } from './stored-result.js'

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

/** A finite number: what every time in a record must be. */
export const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

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

/**
 * A memory store's records: a Map by key (any string, `__proto__` included, and never a prototype
 * read), bounded by `maxEntries`. The done records, which alone may be evicted, are also linked
 * through their `older` and `newer`, least recently used first. (A Map in order of use made eviction
 * O(n): a Map keeps a deleted key's slot until it is rebuilt, and iterating from the front for the
 * oldest key stepped over all of them.) Every method takes `at`, a reading of the store's clock.
 *
 * @example
 * const records = new MemoryRecords(1000)
 * const token = records.claim('k', 'h', 30_000, 60_000, 0) // 'm1'
 * records.complete('k', 'm1', 60_000, '{"value":1}', 5) // true
 */
export class MemoryRecords {
  private readonly byKey = new Map<string, Entry>()
  private oldest: Entry | null = null
  private newest: Entry | null = null
  private tokens = 0
  private readonly maxEntries: number

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries
  }

  get size(): number {
    return this.byKey.size
  }

  clear(): void {
    this.byKey.clear()
    this.oldest = null
    this.newest = null
  }

  /** The token of a new claim of `key`, or what `begin` answers for the live record under it. */
  claim(key: string, argsHash: string, leaseMs: number, ttlMs: number, at: number): string | BeginResult {
    const held = this.live(key, at)
    if (held !== undefined) return answerFor(held, argsHash, at)
    const entry = this.makeRoom(at) ?? blank()
    const token = `m${++this.tokens}`
    entry.key = key
    entry.argsHash = ownCopy(argsHash) // not a slice holding its whole digest for as long as the record lives
    entry.state = 'pending'
    entry.token = token
    entry.leaseUntil = until(at, leaseMs)
    entry.expiresAt = until(at, leaseMs + ttlMs)
    entry.result = undefined
    this.byKey.set(key, entry)
    return token
  }

  /** Settles a pending record as done with `result` (a StoredResult's JSON text, or `undefined` as planted). */
  complete(key: string, token: string, ttlMs: number, result: string | undefined, at: number): boolean {
    const entry = this.owned(key, token, at)
    if (entry === undefined) return false
    entry.state = 'done'
    entry.token = SETTLED
    entry.expiresAt = until(at, ttlMs)
    entry.result = result
    this.link(entry)
    return true
  }

  release(key: string, token: string, at: number): boolean {
    const entry = this.owned(key, token, at)
    if (entry === undefined) return false
    this.drop(entry)
    return true
  }

  markUnknown(key: string, token: string, ttlMs: number, at: number): boolean {
    const entry = this.owned(key, token, at)
    if (entry === undefined) return false
    Object.assign(entry, { state: 'unknown', token: SETTLED, expiresAt: until(at, ttlMs) })
    return true
  }

  /** A new token for a record whose outcome is unknown (recorded or a lapsed lease); `undefined` for any other. */
  reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number, at: number): string | undefined {
    const entry = this.live(key, at)
    if (entry === undefined) return undefined
    const answer = answerFor(entry, argsHash, at)
    if (answer.status !== 'unknown' || answer.reason === 'corrupt') return undefined
    // Pending again under a new token: any earlier token is fenced out.
    const token = `m${++this.tokens}`
    Object.assign(entry, { state: 'pending', token, leaseUntil: until(at, leaseMs), expiresAt: until(at, leaseMs + ttlMs) })
    return token
  }

  /**
   * Plants `raw` under `key` as it is, field by field (an absent field reads as undefined), without
   * making room, as a bug or another writer would. Only a record that reads as done may be evicted;
   * anything else might be an unknown outcome.
   */
  writeRaw(key: string, raw: RawRecord): void {
    const previous = this.byKey.get(key)
    if (previous !== undefined) this.drop(previous)
    const { argsHash, state, token, leaseUntil, expiresAt, result } = raw
    const entry: Entry = Object.assign(blank(), { argsHash, state, token, leaseUntil, expiresAt, result, key })
    this.byKey.set(key, entry)
    if (state === 'done') this.link(entry)
  }

  /** The record of `key` if it has not expired (an expired one is dropped), marked as just used. */
  private live(key: string, at: number): Entry | undefined {
    const entry = this.byKey.get(key)
    if (entry === undefined) return undefined
    if (expired(entry, at)) {
      this.drop(entry)
      return undefined
    }
    if (entry !== this.newest && this.listed(entry)) {
      this.unlink(entry)
      this.link(entry)
    }
    return entry
  }

  /** The pending record under `key` if `token` owns it and it has not expired. */
  private owned(key: string, token: string, at: number): Entry | undefined {
    const entry = this.live(key, at)
    return entry !== undefined && entry.state === 'pending' && entry.token === token ? entry : undefined
  }

  /**
   * Makes room for one more record: least recently used done records first, then expired ones wherever
   * they are. Answers a done record it evicted, for the new one to reuse.
   */
  private makeRoom(at: number): Entry | undefined {
    const { byKey, maxEntries } = this
    let evicted: Entry | undefined
    while (byKey.size >= maxEntries && this.oldest !== null) {
      evicted = this.oldest
      this.drop(evicted)
    }
    if (byKey.size < maxEntries) return evicted
    for (const entry of byKey.values()) if (expired(entry, at)) this.drop(entry)
    if (byKey.size >= maxEntries) throw storeFull(maxEntries)
    return undefined
  }

  private drop(entry: Entry): void {
    this.byKey.delete(entry.key)
    if (this.listed(entry)) this.unlink(entry)
  }

  private listed(entry: Entry): boolean {
    return entry.older !== null || this.oldest === entry
  }

  private unlink(entry: Entry): void {
    if (entry.older === null) this.oldest = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === null) this.newest = entry.older
    else entry.newer.older = entry.older
    entry.older = null
    entry.newer = null
  }

  /** Lists `entry` (not listed now) as the most recently used done record. */
  private link(entry: Entry): void {
    entry.older = this.newest
    if (this.newest === null) this.oldest = entry
    else this.newest.newer = entry
    this.newest = entry
  }
}
