import { Buffer } from 'node:buffer'
import { NONE } from './recency-list.js'

/** Bytes each record has for its key; a longer key (or one with a character past U+00FF) is kept as it is. */
export const KEY_BYTES = 64

/** Nothing was staged yet, or the staged bytes are gone (the index grew). */
const NOTHING = Symbol('nothing staged')

// Object.is, but +0 and -0 are one key, as in a Map.
const sameValueZero = (a: unknown, b: unknown) => a === b || Object.is(a, b)

/** Slots for `records` records: a power of two, at most half of them in use. */
const slotsFor = (records: number) => 2 ** Math.ceil(Math.log2(Math.max(4, 2 * records)))

/**
 * Record numbers by key. The keys are kept as Latin-1 bytes, a slot of {@link KEY_BYTES} per
 * record, so a store of thousands holds no key string the collector must copy; the index is an
 * open-addressing table of typed arrays (linear probing), so a miss reads one or two neighbouring
 * slots of one array and touches no key. Removal shifts the entries behind the hole back instead
 * of leaving a tombstone, so constant churn never fills the table with dead slots.
 *
 * `find` hashes the key as it copies it into a staging slot, in one pass over its characters: a
 * hit then compares bytes with bytes, and `insert` after a miss copies the staged bytes.
 *
 * The hash is FNV-1a over the UTF-16 code units, in two lanes (the even ones and the odd ones, mixed
 * at the end), seeded per index so nobody can choose keys that collide in every process, then
 * murmur3's finaliser so the low bits (which pick the slot) depend on every character. Anything but a string hashes to 0: it still works as a key, found by comparing
 * (SameValueZero, as in a Map).
 *
 * @example
 * const index = new KeyIndex(256, seed)
 * index.find('default 9b1f…') // -1
 * index.insert(7, 'default 9b1f…')
 * index.find('default 9b1f…') // 7
 */
export class KeyIndex {
  /**
   * Two int32s per slot: the hash of its key, then its record number + 1 (0 there marks an empty
   * slot). Side by side, so a probe reads one cache line, and a different hash rules a slot out
   * without reading its key.
   */
  private slots: Int32Array
  private mask: number
  /** Each record's hash, so its slot is found again (to remove it, or to grow) without hashing its key. */
  private hashes: Int32Array
  /** Each record's key bytes at `record * KEY_BYTES`, then the staging slot. */
  private bytes: Buffer
  /** Per record, the length of its key in its slot, or -1 when the key is in `kept`. */
  private lengths: Int32Array
  /** Keys that do not fit a slot, as they are. */
  private kept: unknown[]
  private records: number
  /** The key `find` staged last, its hash, and its length in the staging slot (-1: it does not fit one). */
  private staged: unknown = NOTHING
  private stagedHash = 0
  private stagedLength = -1

  constructor(
    records: number,
    private readonly seed: number,
    /**
     * The bits of each hash that are kept; the others are set. -1 keeps hashes whole; tests pass 0
     * (every key has hash -1: one run of slots, from the last slot round to the first) or a few bits.
     */
    private readonly hashMask = -1,
  ) {
    const slots = slotsFor(records)
    this.slots = new Int32Array(2 * slots)
    this.mask = slots - 1
    this.records = records
    this.hashes = new Int32Array(records)
    this.bytes = Buffer.alloc((records + 1) * KEY_BYTES)
    this.lengths = new Int32Array(records).fill(-1)
    this.kept = new Array<unknown>(records).fill(undefined)
  }

  /** The hash `find` probes with for `key`. */
  hashOf(key: unknown): number {
    this.stage(key)
    return this.stagedHash
  }

  /** The record whose key is `key`, or -1. */
  find(key: unknown): number {
    this.stage(key)
    const hash = this.stagedHash
    const slots = this.slots
    const mask = this.mask
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[2 * slot + 1] as number
      if (entry === 0) return NONE
      if (slots[2 * slot] === hash && this.holdsStaged(entry - 1)) return entry - 1
    }
  }

  /** Adds `record` under `key`, which no other record has. */
  insert(record: number, key: unknown): void {
    if (key !== this.staged) this.stage(key)
    const length = this.stagedLength
    if (length < 0) this.kept[record] = key
    else this.bytes.copyWithin(record * KEY_BYTES, this.records * KEY_BYTES, this.records * KEY_BYTES + length)
    this.lengths[record] = length
    const hash = this.stagedHash
    this.hashes[record] = hash
    const slots = this.slots
    const mask = this.mask
    let slot = hash & mask
    while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask
    slots[2 * slot] = hash
    slots[2 * slot + 1] = record + 1
  }

  /** Takes `record` out, if it is in. */
  remove(record: number): void {
    const slots = this.slots
    const mask = this.mask
    let hole = (this.hashes[record] as number) & mask
    for (; slots[2 * hole + 1] !== record + 1; hole = (hole + 1) & mask) if (slots[2 * hole + 1] === 0) return
    // Each entry of the run behind the hole moves into it when the hole lies on its probe path (between
    // its home slot and where it sits), so every entry stays reachable from its home without tombstones.
    for (let slot = (hole + 1) & mask; slots[2 * slot + 1] !== 0; slot = (slot + 1) & mask) {
      const home = (slots[2 * slot] as number) & mask
      if (((slot - home) & mask) >= ((slot - hole) & mask)) {
        slots[2 * hole] = slots[2 * slot] as number
        slots[2 * hole + 1] = slots[2 * slot + 1] as number
        hole = slot
      }
    }
    slots[2 * hole] = 0
    slots[2 * hole + 1] = 0
    this.lengths[record] = -1
    this.kept[record] = undefined
  }

  /** Room for records `0 … records - 1` (more than now), every entry kept. */
  grow(records: number): void {
    const hashes = new Int32Array(records)
    hashes.set(this.hashes)
    this.hashes = hashes
    const bytes = Buffer.alloc((records + 1) * KEY_BYTES)
    bytes.set(this.bytes.subarray(0, this.records * KEY_BYTES))
    this.bytes = bytes
    this.staged = NOTHING
    const lengths = new Int32Array(records).fill(-1)
    lengths.set(this.lengths)
    this.lengths = lengths
    while (this.kept.length < records) this.kept.push(undefined)
    this.records = records
    const old = this.slots
    const slots = slotsFor(records)
    this.slots = new Int32Array(2 * slots)
    this.mask = slots - 1
    for (let i = 0; i < old.length; i += 2) {
      const entry = old[i + 1] as number
      if (entry === 0) continue
      let slot = (old[i] as number) & this.mask
      while (this.slots[2 * slot + 1] !== 0) slot = (slot + 1) & this.mask
      this.slots[2 * slot] = old[i] as number
      this.slots[2 * slot + 1] = entry
    }
  }

  /** Hashes `key` and copies it into the staging slot, if it fits one. */
  private stage(key: unknown): void {
    this.staged = key
    if (typeof key !== 'string') {
      this.stagedHash = ~this.hashMask
      this.stagedLength = -1
      return
    }
    const bytes = this.bytes
    const at = this.records * KEY_BYTES
    let fits = key.length <= KEY_BYTES
    // Two lanes, the even and the odd code units, so each multiply waits on the one two characters back.
    let h = 0x811c9dc5 ^ this.seed
    let g = 0x2545f491 ^ this.seed
    const length = key.length
    let i = 0
    for (; i + 1 < length; i += 2) {
      const even = key.charCodeAt(i)
      const odd = key.charCodeAt(i + 1)
      h = Math.imul(h ^ even, 0x01000193)
      g = Math.imul(g ^ odd, 0x01000193)
      if ((even | odd) > 0xff) fits = false
      else if (fits) {
        bytes[at + i] = even
        bytes[at + i + 1] = odd
      }
    }
    if (i < length) {
      const last = key.charCodeAt(i)
      h = Math.imul(h ^ last, 0x01000193)
      if (last > 0xff) fits = false
      else if (fits) bytes[at + i] = last
    }
    h = Math.imul(h ^ Math.imul(g ^ (g >>> 15), 0x2c1b3c6d) ^ length, 0x01000193)
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
    this.stagedHash = (h ^ (h >>> 16)) | ~this.hashMask
    this.stagedLength = fits ? key.length : -1
  }

  /** True when `record`'s key is the staged one. */
  private holdsStaged(record: number): boolean {
    const length = this.lengths[record] as number
    if (length !== this.stagedLength) return false
    if (length < 0) return sameValueZero(this.kept[record], this.staged)
    const bytes = this.bytes
    const at = record * KEY_BYTES
    const staged = this.records * KEY_BYTES
    for (let i = 0; i < length; i++) if (bytes[at + i] !== bytes[staged + i]) return false
    return true
  }
}
