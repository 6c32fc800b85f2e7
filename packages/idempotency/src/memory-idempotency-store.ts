import { randomInt } from 'node:crypto'
import { systemClock, ToolError } from '@shallot/core'
import { optionsParser } from '@shallot/core/internal'
import { z } from 'zod'
import type { RawRecord } from './contract-parts.js'
import { flat } from './flat-string.js'
import type { BeginResult, StoredResult, SyncIdempotencyStore } from './idempotency-store.js'
import { KeyIndex } from './key-index.js'
import { NONE, RecencyList } from './recency-list.js'
import { parseStoredResult } from './stored-result.js'
import { TextColumn } from './text-column.js'

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
 * A record read as one object: how `begin` answers for it and how {@link entryProblem} checks it.
 * Records planted by the contract's raw hook are kept as such objects, field by field as given;
 * a record this store wrote is read into one only when `begin` finds it (a replay or a refusal),
 * never on the write path.
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
}

const STATES: ReadonlySet<unknown> = new Set(['pending', 'done', 'unknown'])

/** The token of a settled record: never handed out (tokens count from `m1`). */
const SETTLED = 'm0'

// A record's state, at its number in `state`. A planted record's fields are in its object instead.
const FREE = 0
const PENDING = 1
const DONE = 2
const UNKNOWN = 3
const PLANTED = 4

/**
 * Records a store makes room for when it first admits one (or `maxEntries`, if fewer). A store
 * allocates nothing before then: a stack built per run (a simulation's, a test's) whose calls are
 * reads never pays for one.
 */
const INITIAL_RECORDS = 64

// Bytes each record has for its texts besides its key (KEY_BYTES); a longer text is kept as a string.
// With the key's, they fit what idempotency() stores: a scope and a derived key (`default ` + 32 hex),
// an arguments hash (32 hex), a small result.
const ARGS_HASH_BYTES = 32
const RESULT_BYTES = 64

const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

/**
 * The moment `ms` after `at`, in whole milliseconds rounded up: a lease or a record lasts at most
 * 1 ms longer than asked.
 */
const until = (at: number, ms: number): number => Math.ceil(at + ms)

/** `array`'s values in a longer array of the same kind. */
function longer<T extends Uint8Array | Float64Array>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length)
  next.set(array)
  return next
}

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

// Shared by every store that has admitted nothing yet: found empty, never written (a store's first admit makes its own).
const NO_STATES = new Uint8Array(0)
const NO_TIMES = new Float64Array(0)
const NO_KEYS = new KeyIndex(0, 0)
const NO_ARGS_HASHES = new TextColumn(0, ARGS_HASH_BYTES)
const NO_RESULTS = new TextColumn(0, RESULT_BYTES)
const NO_RECENCY = new RecencyList(0)

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
  return memoryIdempotencyStoreMasked(maxEntries, now, -1)
}

/**
 * {@link memoryIdempotencyStore} with only the `hashMask` bits of each key's hash kept (the others
 * set): -1 for whole hashes; in tests 0 (every key collides) or a few bits (hashes cluster).
 *
 * @example
 * const store = memoryIdempotencyStoreMasked(3, clock.now, 0) // every key in one probe run
 */
export function memoryIdempotencyStoreMasked(maxEntries: number, now: () => number, hashMask: number): MemoryIdempotencyStore {
  // Seeded per store, so no one can choose keys that collide in every process.
  const seed = randomInt(0x1_0000_0000)
  // Records are numbered; a record's fields sit at its number in typed arrays and text columns, so a
  // store of thousands of records is a few dozen objects, none of them holding a young string, and
  // a write touches no object the collector must trace. Numbers grow in steps, up to maxEntries.
  let capacity = 0
  /** Numbers handed out so far; those freed since are in `free`. */
  let used = 0
  let free: number[] = []
  let count = 0
  // The empty columns every store shares until it first admits a record (nothing writes to them).
  let state = NO_STATES
  /** The number of a pending record's token (`m` + it). */
  let token = NO_TIMES
  let leaseUntil = NO_TIMES
  /** NaN for a planted expiry that is not a finite number: such a record never expires. */
  let expiresAt = NO_TIMES
  let index = NO_KEYS
  let argsHashes = NO_ARGS_HASHES
  let results = NO_RESULTS
  /** The done records, which alone may be evicted; a call in flight or an unknown outcome is never in it. */
  let recency = NO_RECENCY
  /** Records the contract's raw hook planted, as it gave them. */
  const planted = new Map<number, Entry>()
  let tokens = 0
  // The record `begin` admitted last, while it is pending, with the key and token `begin` was given
  // and handed out: settling it (most often the very next call on the store) needs no lookup.
  // Forgotten whenever it is settled or dropped.
  let admitted = NONE
  let admittedKey: string | undefined
  let admittedToken: string | undefined

  /** No records, and room for `records` (none: the shared empty columns). */
  function reset(records: number): void {
    capacity = records
    used = 0
    free = []
    count = 0
    const empty = records === 0
    state = empty ? NO_STATES : new Uint8Array(records)
    token = empty ? NO_TIMES : new Float64Array(records)
    leaseUntil = empty ? NO_TIMES : new Float64Array(records)
    expiresAt = empty ? NO_TIMES : new Float64Array(records)
    index = empty ? NO_KEYS : new KeyIndex(records, seed, hashMask)
    argsHashes = empty ? NO_ARGS_HASHES : new TextColumn(records, ARGS_HASH_BYTES)
    results = empty ? NO_RESULTS : new TextColumn(records, RESULT_BYTES)
    recency = empty ? NO_RECENCY : new RecencyList(records)
    planted.clear()
    forgetAdmitted()
  }

  /** Room for the first records, then twice the room, up to maxEntries; past it (only the raw hook plants beyond it) twice again. */
  function grow(): void {
    if (capacity === 0) {
      // Only an empty store has no room: its own columns replace the shared empty ones.
      reset(Math.min(maxEntries, INITIAL_RECORDS))
      return
    }
    const records = capacity < maxEntries ? Math.min(capacity * 2, maxEntries) : capacity * 2
    capacity = records
    state = longer(state, records)
    token = longer(token, records)
    leaseUntil = longer(leaseUntil, records)
    expiresAt = longer(expiresAt, records)
    index.grow(records)
    argsHashes.grow(records)
    results.grow(records)
    recency.grow(records)
  }

  function forgetAdmitted(): void {
    admitted = NONE
    admittedKey = undefined
    admittedToken = undefined
  }

  const expired = (record: number, at: number) => {
    const end = expiresAt[record] as number
    return Number.isFinite(end) && end <= at
  }

  function allocate(): number {
    let record = free.pop()
    if (record === undefined) {
      if (used === capacity) grow()
      record = used++
    }
    count++
    return record
  }

  function drop(record: number): void {
    if (recency.has(record)) recency.remove(record)
    if (record === admitted) forgetAdmitted()
    index.remove(record)
    argsHashes.clear(record)
    results.clear(record)
    if (state[record] === PLANTED) planted.delete(record)
    state[record] = FREE
    free.push(record)
    count--
  }

  /** The record of `key` if it has not expired (an expired one is dropped), marked as just used. */
  function live(key: string, at: number): number {
    const record = index.find(key)
    if (record === NONE) return NONE
    if (expired(record, at)) {
      drop(record)
      return NONE
    }
    if (recency.has(record)) recency.touch(record)
    return record
  }

  /** Makes room for one more record, evicting the least recently used done records first. */
  function makeRoom(at: number): void {
    while (count >= maxEntries && recency.head !== NONE) drop(recency.head)
    if (count < maxEntries) return
    // Only records that may not be evicted are left: drop the expired ones, wherever they sit.
    for (let record = 0; record < used; record++) if (state[record] !== FREE && expired(record, at)) drop(record)
    if (count >= maxEntries) throw storeFull(maxEntries)
  }

  function admit(key: string, argsHash: string, at: number, leaseMs: number, ttlMs: number, tokenNumber: number, handedOut: string): void {
    makeRoom(at)
    const record = allocate()
    argsHashes.set(record, argsHash)
    state[record] = PENDING
    token[record] = tokenNumber
    leaseUntil[record] = until(at, leaseMs)
    expiresAt[record] = until(at, leaseMs + ttlMs)
    index.insert(record, key)
    admitted = record
    admittedKey = key
    admittedToken = handedOut
  }

  /** The record as `begin` reads it: its planted object, or its fields read into one. */
  function entryOf(record: number): Entry {
    const kind = state[record]
    if (kind === PLANTED) return planted.get(record) as Entry
    return {
      argsHash: argsHashes.get(record) as string,
      state: kind === PENDING ? 'pending' : kind === DONE ? 'done' : 'unknown',
      token: kind === PENDING ? `m${token[record]}` : SETTLED,
      leaseUntil: leaseUntil[record] as number,
      expiresAt: expiresAt[record] as number,
      result: results.get(record) as string | undefined,
    }
  }

  function pendingWith(record: number, handedOut: string): boolean {
    const kind = state[record]
    if (kind === PENDING) return handedOut === `m${token[record]}`
    const entry = kind === PLANTED ? planted.get(record) : undefined
    return entry !== undefined && entry.token === handedOut && entry.state === 'pending'
  }

  /** The pending record under `key` if `handedOut` owns it (and it has not expired), which is being settled: no longer {@link admitted}. */
  function owned(key: string, handedOut: string, at: number): number {
    let record: number
    if (admitted !== NONE && admittedToken === handedOut && admittedKey === key) {
      record = admitted
      if (expired(record, at)) {
        drop(record)
        return NONE
      }
    } else {
      record = live(key, at)
      if (record === NONE || !pendingWith(record, handedOut)) return NONE
    }
    if (record === admitted) forgetAdmitted()
    return record
  }

  /** Settles a pending record as done with the text `head + body + tail` (a whole StoredResult's JSON), or, if `head` is not a string, with `head`. */
  function completeText(key: string, handedOut: string, ttlMs: number, head: unknown, body: string, tail: string, at = now()): boolean {
    const record = owned(key, handedOut, at)
    if (record === NONE) return false
    expiresAt[record] = until(at, ttlMs)
    const entry = state[record] === PLANTED ? planted.get(record) : undefined
    if (entry !== undefined) {
      entry.state = 'done'
      entry.token = SETTLED
      entry.result = typeof head === 'string' ? flat(head + body + tail) : (head as undefined)
      entry.expiresAt = expiresAt[record] as number
    } else {
      state[record] = DONE
      if (typeof head === 'string') results.setJoined(record, head, body, tail)
      else results.set(record, head)
    }
    recency.append(record)
    return true
  }

  /** The token of a new claim of `key`, or what `begin` answers for the live record under it. */
  function claim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | BeginResult {
    const at = now()
    const record = live(key, at)
    if (record !== NONE) return answerFor(entryOf(record), argsHash, at)
    const handedOut = `m${tokens + 1}`
    admit(key, argsHash, at, leaseMs, ttlMs, tokens + 1, handedOut)
    tokens++
    return handedOut
  }

  const store: MemoryIdempotencyStore = {
    begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
      const answer = claim(key, argsHash, leaseMs, ttlMs)
      return typeof answer === 'string' ? { status: 'new', token: answer } : answer
    },
    complete(key: string, handedOut: string, result: StoredResult, ttlMs: number): boolean {
      return completeText(key, handedOut, ttlMs, JSON.stringify(result), '', '')
    },
    release(key: string, handedOut: string): boolean {
      const record = owned(key, handedOut, now())
      if (record === NONE) return false
      drop(record)
      return true
    },
    markUnknown(key: string, handedOut: string, ttlMs: number): boolean {
      const at = now()
      const record = owned(key, handedOut, at)
      if (record === NONE) return false
      expiresAt[record] = until(at, ttlMs)
      const entry = state[record] === PLANTED ? planted.get(record) : undefined
      if (entry !== undefined) {
        entry.state = 'unknown'
        entry.token = SETTLED
        entry.expiresAt = expiresAt[record] as number
      } else state[record] = UNKNOWN
      return true
    },
    reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): string | undefined {
      const at = now()
      const record = live(key, at)
      if (record === NONE) return undefined
      const answer = answerFor(entryOf(record), argsHash, at)
      if (answer.status !== 'unknown' || answer.reason === 'corrupt') return undefined
      // Pending again under a new token: any earlier token is fenced out, the one admitted last included.
      if (record === admitted) forgetAdmitted()
      const handedOut = `m${++tokens}`
      leaseUntil[record] = until(at, leaseMs)
      expiresAt[record] = until(at, leaseMs + ttlMs)
      const entry = state[record] === PLANTED ? planted.get(record) : undefined
      if (entry !== undefined)
        Object.assign(entry, { state: 'pending', token: handedOut, leaseUntil: leaseUntil[record], expiresAt: expiresAt[record] })
      else {
        state[record] = PENDING
        token[record] = tokens
      }
      return handedOut
    },
    get size() {
      return count
    },
    clear() {
      reset(0)
    },
  }
  internals.set(store, {
    claim,
    completeText: (key, handedOut, json, ttlMs, given) => {
      const at = isTime(given) ? given : now()
      return json === undefined
        ? completeText(key, handedOut, ttlMs, '{}', '', '', at)
        : completeText(key, handedOut, ttlMs, '{"value":', typeof json === 'string' ? json : `${json}`, '}', at)
    },
    now,
    writeRaw: (key, raw) => {
      const known = index.find(key)
      if (known !== NONE) drop(known)
      // Planted as it is, field by field (an absent field reads as undefined), without making room, as
      // a bug or another writer would. Only a record that reads as done is linked, so only it may be
      // evicted; anything else might be an unknown outcome.
      const record = allocate()
      state[record] = PLANTED
      planted.set(record, {
        argsHash: raw.argsHash,
        state: raw.state,
        token: raw.token,
        leaseUntil: raw.leaseUntil,
        expiresAt: raw.expiresAt,
        result: raw.result,
      } as Entry)
      expiresAt[record] = isTime(raw.expiresAt) ? raw.expiresAt : Number.NaN
      index.insert(record, key)
      if (raw.state === 'done') recency.append(record)
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
