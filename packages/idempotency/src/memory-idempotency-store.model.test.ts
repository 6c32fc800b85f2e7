import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { BeginResult, StoredResult } from './idempotency-store.js'
import {
  type MemoryIdempotencyStore,
  memoryCompleteWithText,
  memoryIdempotencyStore,
  memoryIdempotencyStoreRawWriter,
} from './memory-idempotency-store.js'

/** Time that moves only when a test moves it, synchronously (the store's methods are synchronous too). */
function manualTime() {
  let t = 1_700_000_000_000
  return { now: () => t, advance: (ms: number) => void (t += ms) }
}

/**
 * The memory store's semantics in the plainest form: a Map of records and an array of the done
 * keys, least recently used first. The store must answer exactly as this does, whatever its layout.
 */
interface ReferenceRecord {
  argsHash: string
  state: 'pending' | 'done' | 'unknown' | 42
  token: string
  leaseUntil: number
  expiresAt: number
  result?: string
}

class ReferenceStore {
  private records = new Map<string, ReferenceRecord>()
  private recency: string[] = []
  private tokens = 0

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get size() {
    return this.records.size
  }

  private drop(key: string) {
    this.records.delete(key)
    this.recency = this.recency.filter((k) => k !== key)
  }

  private live(key: string, at: number) {
    const record = this.records.get(key)
    if (record === undefined) return undefined
    if (record.expiresAt <= at) {
      this.drop(key)
      return undefined
    }
    if (record.state === 'done') this.recency = [...this.recency.filter((k) => k !== key), key]
    return record
  }

  begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): BeginResult {
    const at = this.now()
    const record = this.live(key, at)
    if (record === undefined) {
      while (this.records.size >= this.maxEntries && this.recency.length > 0) this.drop(this.recency[0] as string)
      if (this.records.size >= this.maxEntries) for (const [k, r] of [...this.records]) if (r.expiresAt <= at) this.drop(k)
      if (this.records.size >= this.maxEntries) throw Object.assign(new Error('full'), { code: 'store_full' })
      const token = `m${++this.tokens}`
      this.records.set(key, {
        argsHash,
        state: 'pending',
        token,
        leaseUntil: Math.ceil(at + leaseMs),
        expiresAt: Math.ceil(at + leaseMs + ttlMs),
      })
      return { status: 'new', token }
    }
    if (record.state === 42) return { status: 'unknown', reason: 'corrupt', problem: 'state is not pending, done or unknown' }
    if (record.argsHash !== argsHash) return { status: 'mismatch' }
    if (record.state === 'done') return { status: 'done', result: JSON.parse(record.result as string) }
    if (record.state === 'unknown') return { status: 'unknown', reason: 'recorded' }
    return record.leaseUntil > at ? { status: 'in_flight' } : { status: 'unknown', reason: 'lease_expired' }
  }

  private owned(key: string, token: string) {
    const record = this.live(key, this.now())
    return record !== undefined && record.state === 'pending' && record.token === token ? record : undefined
  }

  complete(key: string, token: string, text: string, ttlMs: number): boolean {
    const record = this.owned(key, token)
    if (record === undefined) return false
    Object.assign(record, { state: 'done', token: 'm0', result: text, expiresAt: Math.ceil(this.now() + ttlMs) })
    this.recency.push(key)
    return true
  }

  release(key: string, token: string): boolean {
    if (this.owned(key, token) === undefined) return false
    this.drop(key)
    return true
  }

  markUnknown(key: string, token: string, ttlMs: number): boolean {
    const record = this.owned(key, token)
    if (record === undefined) return false
    Object.assign(record, { state: 'unknown', token: 'm0', expiresAt: Math.ceil(this.now() + ttlMs) })
    return true
  }

  /** What the contract's raw hook does: replaces the key's record, without making room. */
  plant(key: string, record: ReferenceRecord) {
    this.drop(key)
    this.records.set(key, { ...record })
    if (record.state === 'done') this.recency.push(key)
  }

  clear() {
    this.records.clear()
    this.recency = []
  }
}

// Keys a hash table or an object-as-map gets wrong: prototype names, empty and blank keys, keys past
// Latin-1, a lone surrogate, keys that differ only at the end, and lengths on both sides of the 64
// bytes a record has for its key (32 for its arguments hash, 64 for its result).
const KEYS = [
  'default a',
  'default b',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  '',
  ' ',
  'é',
  'e\u0301',
  '日本語のキー',
  '\ud800',
  '😀',
  'k'.repeat(63),
  'k'.repeat(64),
  'k'.repeat(65),
  'k'.repeat(5000),
  `${'x'.repeat(300)}1`,
  `${'x'.repeat(300)}2`,
]
const HASHES = ['h1', 'h2', 'ü-hash', 'h'.repeat(32), 'h'.repeat(33), 'h'.repeat(5000)]
const VALUES: StoredResult[] = [
  {},
  { value: 1 },
  { value: 'ç€😀' },
  { value: { __proto__: null, a: [1, null] } as never },
  { value: 'v'.repeat(52) }, // 64 characters stored
  { value: 'v'.repeat(53) },
  { value: 'v'.repeat(5000) },
]

type Op =
  | { op: 'begin'; key: number; hash: number; lease: number; ttl: number }
  | { op: 'complete'; key: number; token: number; value: number; ttl: number; asText: boolean }
  | { op: 'release'; key: number; token: number }
  | { op: 'markUnknown'; key: number; token: number; ttl: number }
  | { op: 'plant'; key: number; hash: number; state: ReferenceRecord['state']; token: number; value: number; ttl: number }
  | { op: 'advance'; ms: number }
  | { op: 'clear' }

const index = (n: number) => fc.nat({ max: n - 1 })
const ms = fc.constantFrom(1, 5, 10, 50)
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('begin' as const), key: index(KEYS.length), hash: index(HASHES.length), lease: ms, ttl: ms }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('complete' as const),
      key: index(KEYS.length),
      token: fc.nat(),
      value: index(VALUES.length),
      ttl: ms,
      asText: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('release' as const), key: index(KEYS.length), token: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('markUnknown' as const), key: index(KEYS.length), token: fc.nat(), ttl: ms }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('plant' as const),
      key: index(KEYS.length),
      hash: index(HASHES.length),
      state: fc.constantFrom('pending' as const, 'done' as const, 'unknown' as const, 42 as const),
      token: fc.nat(),
      value: index(VALUES.length),
      ttl: ms,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.constantFrom(1, 4, 9, 30) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
)

/** Answers of `fn`, or the code of what it threw. */
function outcome<T>(fn: () => T): T | { threw: unknown } {
  try {
    return fn()
  } catch (err) {
    return { threw: (err as { code?: unknown }).code }
  }
}

/** Runs `ops` on a store and on the reference, and expects every answer and size to agree. */
function agree(make: (maxEntries: number, now: () => number) => MemoryIdempotencyStore, maxEntries: number, ops: Op[]) {
  const clock = manualTime()
  const store = make(maxEntries, clock.now)
  const reference = new ReferenceStore(maxEntries, clock.now)
  const completeText = memoryCompleteWithText(store)
  const writeRaw = memoryIdempotencyStoreRawWriter(store)
  // Tokens handed out so far, current and stale, plus tokens no store hands out; and each key's last one.
  const tokens = ['m0', 'm01', 'x', '']
  const last = new Map<string, string>()
  for (const [step, o] of ops.entries()) {
    const where = `step ${step}: ${JSON.stringify(o)}`
    const key = 'key' in o ? (KEYS[o.key] as string) : ''
    // Mostly the key's own last token, so that settling happens; otherwise any token, stale or foreign.
    const token = 'token' in o ? ((o.token % 4 !== 0 ? last.get(key) : undefined) ?? (tokens[o.token % tokens.length] as string)) : ''
    if (o.op === 'begin') {
      const hash = HASHES[o.hash] as string
      const got = outcome(() => store.begin(key, hash, o.lease, o.ttl))
      expect(got, where).toEqual(outcome(() => reference.begin(key, hash, o.lease, o.ttl)))
      if ('token' in got) {
        tokens.push(got.token)
        last.set(key, got.token)
      }
    } else if (o.op === 'complete') {
      const value = VALUES[o.value] as StoredResult
      const text = JSON.stringify(value)
      const got = o.asText
        ? completeText?.(key, token, value.value === undefined ? undefined : JSON.stringify(value.value), o.ttl)
        : store.complete(key, token, value, o.ttl)
      expect(got, where).toBe(reference.complete(key, token, text, o.ttl))
    } else if (o.op === 'release') expect(store.release(key, token), where).toBe(reference.release(key, token))
    else if (o.op === 'markUnknown') expect(store.markUnknown(key, token, o.ttl), where).toBe(reference.markUnknown(key, token, o.ttl))
    else if (o.op === 'plant') {
      // A well-formed record (a pending one with a token of this store's form, maybe one handed out
      // for another key), or one whose state is corrupt.
      const at = clock.now()
      const pending = o.state === 'pending'
      const formed = tokens.filter((t) => /^m[0-9]+$/.test(t))
      const record: ReferenceRecord = {
        argsHash: HASHES[o.hash] as string,
        state: o.state,
        token: pending ? (formed[o.token % formed.length] as string) : 'm0',
        leaseUntil: pending ? at + 5 : at,
        expiresAt: at + (pending ? 5 : 0) + o.ttl,
        ...(o.state === 'done' ? { result: JSON.stringify(VALUES[o.value]) } : {}),
      }
      writeRaw(key, record)
      reference.plant(key, record)
      if (pending) last.set(key, record.token)
    } else if (o.op === 'advance') clock.advance(o.ms)
    else {
      store.clear()
      reference.clear()
    }
    expect(store.size, where).toBe(reference.size)
  }
  // Whatever is left answers as the reference's records do.
  for (const key of KEYS)
    expect(
      outcome(() => store.begin(key, 'h1', 5, 5)),
      key,
    ).toEqual(outcome(() => reference.begin(key, 'h1', 5, 5)))
}

const seeded = (maxEntries: number, now: () => number) => memoryIdempotencyStore({ maxEntries, now })

describe('memoryIdempotencyStore answers exactly as a Map of records with a recency list would', () => {
  // The programs: begin, complete (with the result or its JSON text), release, markUnknown, records
  // planted through the raw hook, clear() and time, on stores of 1 to 6 records that must evict.
  it('random programs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { maxLength: 120 }), (maxEntries, ops) => agree(seeded, maxEntries, ops)),
      { numRuns: 450 },
    )
  })

  it('through eviction at scale: 3,000 records in a store of 2,000', () => {
    const clock = manualTime()
    const ops: Op[] = []
    for (let i = 0; i < 3000; i++) ops.push({ op: 'begin', key: i % KEYS.length, hash: 0, lease: 10, ttl: 50 })
    agree(seeded, 2000, ops)
    // And by key, with distinct keys: filling to maxEntries, then eviction.
    const store = seeded(2000, clock.now)
    const reference = new ReferenceStore(2000, clock.now)
    for (let i = 0; i < 3000; i++) {
      const key = `default ${i}`
      const begun = store.begin(key, 'h', 10, 1000)
      expect(begun).toEqual(reference.begin(key, 'h', 10, 1000))
      if (begun.status !== 'new') continue
      expect(store.complete(key, begun.token, { value: i }, 1000)).toBe(
        reference.complete(key, begun.token, JSON.stringify({ value: i }), 1000),
      )
    }
    for (let i = 0; i < 3000; i++)
      expect(outcome(() => store.begin(`default ${i}`, 'h', 10, 1000))).toEqual(
        outcome(() => reference.begin(`default ${i}`, 'h', 10, 1000)),
      )
    expect(store.size).toBe(2000)
  })
})

describe('memoryIdempotencyStore under hostile keys and churn', () => {
  const LEASE = 10
  const TTL = 1000

  function settle(store: MemoryIdempotencyStore, key: string, value: unknown, hash = 'h') {
    const begun = store.begin(key, hash, LEASE, TTL)
    if (begun.status !== 'new') throw new Error(`${key}: expected new, got ${begun.status}`)
    expect(store.complete(key, begun.token, { value: value as never }, TTL)).toBe(true)
  }

  it('keeps three keys apart, whichever of them goes first', () => {
    for (const gone of ['a', 'b', 'c']) {
      const store = memoryIdempotencyStore({ maxEntries: 10, now: manualTime().now })
      const begun = new Map(['a', 'b', 'c'].map((key) => [key, store.begin(key, 'h', LEASE, TTL)]))
      const token = (key: string) => (begun.get(key) as { token: string }).token
      expect(store.release(gone, token(gone))).toBe(true)
      for (const key of ['a', 'b', 'c'])
        expect(store.begin(key, 'h', LEASE, TTL).status, `${key} after ${gone} went`).toBe(key === gone ? 'new' : 'in_flight')
      for (const key of ['a', 'b', 'c']) if (key !== gone) expect(store.complete(key, token(key), { value: key }, TTL)).toBe(true)
      for (const key of ['a', 'b', 'c'])
        if (key !== gone) expect(store.begin(key, 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: key } })
      expect(store.begin('a', 'h2', LEASE, TTL)).toEqual({ status: 'mismatch' })
      expect(store.size).toBe(3)
    }
  })

  it('drops a record that expired in flight once, however often its old token tries to settle it', () => {
    const clock = manualTime()
    const store = memoryIdempotencyStore({ maxEntries: 2, now: clock.now })
    const begun = store.begin('a', 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error('expected new')
    clock.advance(LEASE + TTL)
    for (let i = 0; i < 3; i++) {
      expect(store.complete('a', begun.token, { value: i }, TTL)).toBe(false)
      expect(store.markUnknown('a', begun.token, TTL)).toBe(false)
      expect(store.release('a', begun.token)).toBe(false)
      expect(store.size).toBe(0)
    }
    settle(store, 'b', 'B')
    settle(store, 'c', 'C')
    expect(store.size).toBe(2)
    expect(store.begin('b', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'B' } })
  })

  it('plants records past maxEntries through the raw hook, as before, and reads each back', () => {
    const store = memoryIdempotencyStore({ maxEntries: 2, now: manualTime().now })
    const writeRaw = memoryIdempotencyStoreRawWriter(store)
    const record = (i: number) => ({
      argsHash: 'h',
      state: 'done',
      token: 'm0',
      leaseUntil: 0,
      expiresAt: Number.MAX_SAFE_INTEGER,
      result: `{"value":${i}}`,
    })
    for (let i = 0; i < 700; i++) writeRaw(`planted ${i}`, record(i))
    expect(store.size).toBe(700)
    for (let i = 0; i < 700; i += 37) expect(store.begin(`planted ${i}`, 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: i } })
    settle(store, 'fresh', 'F') // evicts planted done records, least recently used first, down to room for one
    expect(store.size).toBe(2)
    expect(store.begin('planted 666', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 666 } })
    expect(store.begin('planted 1', 'h', LEASE, TTL).status).toBe('new')
  })

  it('finds every live key and misses every gone one after 100,000 evictions through a table of 8', () => {
    const store = memoryIdempotencyStore({ maxEntries: 8, now: manualTime().now })
    for (let i = 0; i < 100_000; i++) settle(store, `default ${i}`, i)
    expect(store.size).toBe(8)
    for (let i = 100_000 - 8; i < 100_000; i++)
      expect(store.begin(`default ${i}`, 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: i } })
    expect(store.begin('default 0', 'h', LEASE, TTL).status).toBe('new')
  })

  it('re-adds a released key at once, and a stale token of it settles nothing', () => {
    const store = memoryIdempotencyStore({ maxEntries: 4, now: manualTime().now })
    const tokens: string[] = []
    for (let round = 0; round < 50; round++) {
      const begun = store.begin('__proto__', 'h', LEASE, TTL)
      if (begun.status !== 'new') throw new Error('expected new')
      for (const stale of tokens) expect(store.complete('__proto__', stale, { value: 'stale' }, TTL)).toBe(false)
      expect(store.release('__proto__', begun.token)).toBe(true)
      tokens.push(begun.token)
    }
    expect(store.size).toBe(0)
    settle(store, '__proto__', 'last')
    expect(store.begin('__proto__', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'last' } })
  })

  it('after clear() grows again from nothing, and settles nothing begun before it', () => {
    const store = memoryIdempotencyStore({ maxEntries: 1000, now: manualTime().now })
    for (let i = 0; i < 600; i++) settle(store, `k${i}`, i)
    const pending = store.begin('pending', 'h', LEASE, TTL)
    if (pending.status !== 'new') throw new Error('expected new')
    store.clear()
    expect(store.size).toBe(0)
    expect(store.complete('pending', pending.token, { value: 1 }, TTL)).toBe(false)
    expect(store.begin('k1', 'h', LEASE, TTL).status).toBe('new')
    for (let i = 0; i < 900; i++) if (i !== 1) settle(store, `k${i}`, 1000 + i)
    for (let i = 0; i < 900; i++)
      if (i !== 1) expect(store.begin(`k${i}`, 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 1000 + i } })
    expect(store.size).toBe(900)
  })

  it('drops every record once all have expired, pinned or not, and admits a full store of new ones', () => {
    const clock = manualTime()
    const store = memoryIdempotencyStore({ maxEntries: 300, now: clock.now })
    for (let i = 0; i < 100; i++) settle(store, `done ${i}`, i)
    for (let i = 0; i < 100; i++) store.begin(`in flight ${i}`, 'h', LEASE, TTL)
    for (let i = 0; i < 100; i++) {
      const begun = store.begin(`unknown ${i}`, 'h', LEASE, TTL)
      if (begun.status === 'new') store.markUnknown(`unknown ${i}`, begun.token, TTL)
    }
    expect(() => store.begin('one more', 'h', LEASE, TTL)).not.toThrow() // evicts a done record
    clock.advance(LEASE + TTL)
    for (let i = 0; i < 300; i++) expect(store.begin(`fresh ${i}`, 'h', LEASE, TTL).status).toBe('new')
    expect(store.size).toBe(300)
    // The old keys are gone: claiming one again needs room, and the store is full of fresh calls in flight.
    for (const kind of ['done', 'in flight', 'unknown'])
      expect(() => store.begin(`${kind} 5`, 'h', LEASE, TTL)).toThrow(expect.objectContaining({ code: 'store_full' }))
  })

  it('with maxEntries 1, holds one record and evicts it only when it is done', () => {
    const store = memoryIdempotencyStore({ maxEntries: 1, now: manualTime().now })
    settle(store, 'a', 'A')
    settle(store, 'b', 'B')
    expect(store.size).toBe(1)
    expect(store.begin('b', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'B' } })
    expect(store.begin('c', 'h', LEASE, TTL).status).toBe('new')
    expect(() => store.begin('d', 'h', LEASE, TTL)).toThrow(expect.objectContaining({ code: 'store_full' }))
  })

  it('takes room as records come: a store of 10,000,000 records costs little until it is used', () => {
    const before = process.memoryUsage().arrayBuffers
    const stores = Array.from({ length: 20 }, () => memoryIdempotencyStore({ maxEntries: 10_000_000 }))
    const perStore = (process.memoryUsage().arrayBuffers - before) / stores.length
    expect(perStore).toBeLessThan(256 * 1024)
    for (let i = 0; i < 5000; i++) settle(stores[0] as MemoryIdempotencyStore, `k${i}`, i)
    for (let i = 0; i < 5000; i++) expect(stores[0]?.begin(`k${i}`, 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: i } })
  })

  it('replays keys, arguments hashes and results of any characters and size exactly', () => {
    const store = memoryIdempotencyStore({ maxEntries: 50, now: manualTime().now })
    const text = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 })
    fc.assert(
      fc.property(
        text,
        text.filter((h) => h !== ''),
        fc.oneof(text, fc.constant('x'.repeat(10_000))),
        (suffix, hash, value) => {
          const key = `default ${suffix}`
          store.clear()
          settle(store, key, value, hash)
          settle(store, `${key}!`, value.length, `${hash}!`)
          expect(store.begin(key, hash, LEASE, TTL)).toEqual({ status: 'done', result: { value } })
          expect(store.begin(key, `${hash}?`, LEASE, TTL)).toEqual({ status: 'mismatch' })
          expect(store.begin(`${key}?`, hash, LEASE, TTL).status).toBe('new')
        },
      ),
      { numRuns: 200 },
    )
    // A 2 MiB result, stored through complete() as idempotency() would.
    const huge = 'ü'.repeat(2 * 1024 * 1024)
    settle(store, 'huge', { text: huge })
    expect(store.begin('huge', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: { text: huge } } })
  })

  it('stores what memoryCompleteWithText is given as the result it stands for', () => {
    const store = memoryIdempotencyStore({ now: manualTime().now })
    const complete = memoryCompleteWithText(store)
    const a = store.begin('a', 'h', LEASE, TTL)
    const b = store.begin('b', 'h', LEASE, TTL)
    if (a.status !== 'new' || b.status !== 'new') throw new Error('expected new')
    expect(complete?.('b', b.token, '{"chargeId":"ch_€"}', TTL)).toBe(true)
    expect(complete?.('a', a.token, undefined, TTL)).toBe(true)
    expect(complete?.('a', a.token, '1', TTL)).toBe(false)
    expect(store.begin('a', 'h', LEASE, TTL)).toEqual({ status: 'done', result: {} })
    expect(store.begin('b', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: { chargeId: 'ch_€' } } })
  })
})
