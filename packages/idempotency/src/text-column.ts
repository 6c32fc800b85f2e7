import { Buffer } from 'node:buffer'
import { flat } from './flat-string.js'

// Object.is, but +0 and -0 are one key, as in a Map.
const sameValueZero = (a: unknown, b: unknown) => a === b || Object.is(a, b)

/** Copies `text` into `bytes` from `at` on: where it ended, or -1 (also when `at` is) for a character past U+00FF. */
function latin1Into(bytes: Uint8Array, at: number, text: string): number {
  if (at < 0) return -1
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code > 0xff) return -1
    bytes[at + i] = code
  }
  return at + text.length
}

/**
 * One text per record number, kept as Latin-1 bytes in a slot of `slotBytes` bytes per record
 * instead of as a string. A record lives for thousands of calls: as a string, each of its texts
 * would be copied by the scavenger, promoted, remembered as a pointer from an old object to a
 * young one, and be garbage for the full collector once evicted. Bytes in an `ArrayBuffer` are
 * none of that; the strings a call made die young, as they would in a store of a hundred records.
 *
 * Every record has its slot, so a text is written where it goes: no allocation, no holes, nothing
 * to compact. A text that does not fit (longer than the slot, a character past U+00FF, not a
 * string) is kept as it is, so every value round-trips exactly.
 *
 * @example
 * const keys = new TextColumn(256, 64)
 * keys.set(7, 'default 9b1f…')
 * keys.equals(7, 'default 9b1f…') // true
 */
export class TextColumn {
  private bytes: Buffer
  /** Per record, the length of its text in its slot, or -1 when it is in `kept` (or the record has none). */
  private length: Int32Array
  /** Texts kept as they are; `undefined` for a record without one. */
  private kept: unknown[]

  constructor(
    records: number,
    /** Bytes of each record's slot. */
    readonly slotBytes: number,
  ) {
    this.bytes = Buffer.alloc(records * slotBytes)
    this.length = new Int32Array(records).fill(-1)
    this.kept = new Array<unknown>(records).fill(undefined)
  }

  /** Room for records `0 … records - 1` (more than now), every text kept. */
  grow(records: number): void {
    const bytes = Buffer.alloc(records * this.slotBytes)
    bytes.set(this.bytes)
    this.bytes = bytes
    const length = new Int32Array(records).fill(-1)
    length.set(this.length)
    this.length = length
    while (this.kept.length < records) this.kept.push(undefined)
  }

  /** Makes `text` the record's text. */
  set(record: number, text: unknown): void {
    this.clear(record)
    if (typeof text !== 'string' || !this.write(record, text, '', '')) this.kept[record] = text
  }

  /** Makes `head + body + tail` the record's text, without building that string when it fits in the slot. */
  setJoined(record: number, head: string, body: string, tail: string): void {
    this.clear(record)
    if (!this.write(record, head, body, tail)) this.kept[record] = flat(head + body + tail)
  }

  /** The record's text, `undefined` when it has none. */
  get(record: number): unknown {
    const length = this.length[record] as number
    if (length < 0) return this.kept[record]
    const at = record * this.slotBytes
    return this.bytes.toString('latin1', at, at + length)
  }

  /** True when the record's text is `text` (SameValueZero, as a `Map` compares keys), without reading it into a string. */
  equals(record: number, text: unknown): boolean {
    const length = this.length[record] as number
    if (length < 0) return sameValueZero(this.kept[record], text)
    if (typeof text !== 'string' || text.length !== length) return false
    const bytes = this.bytes
    const at = record * this.slotBytes
    for (let i = 0; i < length; i++) if (text.charCodeAt(i) !== bytes[at + i]) return false
    return true
  }

  /** Forgets the record's text. */
  clear(record: number): void {
    this.length[record] = -1
    this.kept[record] = undefined
  }

  /** Writes `head + body + tail` into the record's slot, or answers false when it cannot be held there. */
  private write(record: number, head: string, body: string, tail: string): boolean {
    const size = head.length + body.length + tail.length
    if (size > this.slotBytes) return false
    const bytes = this.bytes
    const at = record * this.slotBytes
    if (latin1Into(bytes, latin1Into(bytes, latin1Into(bytes, at, head), body), tail) < 0) return false
    this.length[record] = size
    return true
  }
}
