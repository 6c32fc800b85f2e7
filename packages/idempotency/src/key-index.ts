import type { TextColumn } from './text-column.js'

/** A 32-bit hash of a store key. */
export type KeyHash = (key: unknown) => number

/**
 * A key hash seeded per store, so nobody can pick keys that collide in every process: FNV-1a over
 * the UTF-16 code units, then murmur3's finaliser, so the low bits (which pick the slot) depend on
 * every character. Anything but a string hashes to 0: it still works as a key, found by comparing.
 *
 * @example
 * const hash = seededKeyHash(0x2545f491)
 * hash('default 9b1f…') === hash('default 9b1f…') // true
 */
export function seededKeyHash(seed: number): KeyHash {
  return (key) => {
    if (typeof key !== 'string') return 0
    let h = 0x811c9dc5 ^ seed
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
    return h ^ (h >>> 16)
  }
}

/** Slots for `records` records: a power of two, at most half of them in use. */
const slotsFor = (records: number) => 2 ** Math.ceil(Math.log2(Math.max(4, 2 * records)))

/**
 * Record numbers by key, in an open-addressing table of typed arrays (linear probing): a miss reads
 * one or two neighbouring slots of one array and touches no record; a hit compares the one key
 * whose hash matches. Removal shifts the entries behind the hole back instead of leaving a
 * tombstone, so a table with constant churn never fills with dead slots and never needs a rebuild.
 *
 * @example
 * const index = new KeyIndex(256)
 * index.insert(7, hash(key)) // after keys.set(7, key)
 * index.find(hash(key), key, keys) // 7
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

  constructor(records: number) {
    const slots = slotsFor(records)
    this.slots = new Int32Array(2 * slots)
    this.mask = slots - 1
    this.hashes = new Int32Array(records)
  }

  /** The record whose key is `key` (its hash `hash`, its text in `keys`), or -1. */
  find(hash: number, key: unknown, keys: TextColumn): number {
    const slots = this.slots
    const mask = this.mask
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[2 * slot + 1] as number
      if (entry === 0) return -1
      if (slots[2 * slot] === hash && keys.equals(entry - 1, key)) return entry - 1
    }
  }

  /** Adds `record`, whose key hashes to `hash` and is in no other record. */
  insert(record: number, hash: number): void {
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
  }

  /** Room for records `0 … records - 1` (more than now), every entry kept. */
  grow(records: number): void {
    const hashes = new Int32Array(records)
    hashes.set(this.hashes)
    this.hashes = hashes
    const old = this.slots
    const slots = slotsFor(records)
    this.slots = new Int32Array(2 * slots)
    this.mask = slots - 1
    for (let i = 0; i < old.length; i += 2) {
      const entry = old[i + 1] as number
      if (entry !== 0) this.insert(entry - 1, old[i] as number)
    }
  }
}
