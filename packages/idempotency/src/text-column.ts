import { Buffer } from 'node:buffer'
import { flat } from './flat-string.js'

/** Texts longer than this stay strings: copying them in and out would cost more than the collector copying them once. */
export const INLINE_LIMIT = 4096

/** Bytes of a new or emptied column. */
const INITIAL_BYTES = 4096

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
 * One text per record number, kept as Latin-1 bytes in a single buffer instead of as strings. A
 * record lives for thousands of calls: as a string, each of its texts would be copied by the
 * scavenger, promoted, remembered as a pointer from an old object to a young one, and be garbage
 * for the full collector once evicted. Bytes in an `ArrayBuffer` are none of that; the strings a
 * call made die young, as they would in a store of a hundred records.
 *
 * A text that is not a string, holds a character past U+00FF or is longer than {@link INLINE_LIMIT}
 * is kept as it is, so every value round-trips exactly. New texts go at the end of the buffer; a
 * text cleared or replaced leaves a hole, and when the end is reached the live texts are copied,
 * in record order, to a buffer twice their size (or at least {@link INITIAL_BYTES}): each byte
 * written is copied at most once more on average. Two buffers of that size take turns, so a column
 * in its steady state allocates nothing.
 *
 * @example
 * const keys = new TextColumn(256)
 * keys.set(7, 'default 9b1f…')
 * keys.equals(7, 'default 9b1f…') // true
 */
export class TextColumn {
  private bytes: Buffer = Buffer.alloc(INITIAL_BYTES)
  /**
   * The buffer compaction last copied out of, reused by the next one of the same size: a busy column
   * compacts every few thousand writes, and a new megabyte each time would be external memory the
   * collector answers with full collections.
   */
  private spare: Buffer | undefined
  /** Per record, where its text starts in `bytes`, or -1 when it is in `kept` (or the record has none). */
  private start: Int32Array
  private length: Int32Array
  /** Texts kept as they are; `undefined` for a record without one. */
  private kept: unknown[]
  /** Where the next text goes. */
  private end = 0
  /** Bytes before `end` that no text uses any more. */
  private holes = 0

  constructor(records: number) {
    this.start = new Int32Array(records).fill(-1)
    this.length = new Int32Array(records)
    this.kept = new Array<unknown>(records).fill(undefined)
  }

  /** Room for records `0 … records - 1` (more than now); the texts already held stay where they are. */
  grow(records: number): void {
    const start = new Int32Array(records).fill(-1)
    start.set(this.start)
    const length = new Int32Array(records)
    length.set(this.length)
    this.start = start
    this.length = length
    while (this.kept.length < records) this.kept.push(undefined)
  }

  /** Makes `text` the record's text. */
  set(record: number, text: unknown): void {
    this.clear(record)
    if (typeof text !== 'string' || !this.write(record, text, '', '')) this.kept[record] = text
  }

  /** Makes `head + body + tail` the record's text, without building that string when it fits in the buffer. */
  setJoined(record: number, head: string, body: string, tail: string): void {
    this.clear(record)
    if (!this.write(record, head, body, tail)) this.kept[record] = flat(head + body + tail)
  }

  /** The record's text, `undefined` when it has none. */
  get(record: number): unknown {
    const at = this.start[record] as number
    if (at < 0) return this.kept[record]
    return this.bytes.toString('latin1', at, at + (this.length[record] as number))
  }

  /** True when the record's text is `text` (SameValueZero, as a `Map` compares keys), without reading it into a string. */
  equals(record: number, text: unknown): boolean {
    const at = this.start[record] as number
    if (at < 0) return sameValueZero(this.kept[record], text)
    if (typeof text !== 'string' || text.length !== this.length[record]) return false
    const bytes = this.bytes
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== bytes[at + i]) return false
    return true
  }

  /** Forgets the record's text. */
  clear(record: number): void {
    if ((this.start[record] as number) >= 0) {
      this.holes += this.length[record] as number
      this.start[record] = -1
    } else this.kept[record] = undefined
  }

  /** Writes `head + body + tail` at the end, or answers false, leaving the record textless, when it cannot be held as bytes. */
  private write(record: number, head: string, body: string, tail: string): boolean {
    const size = head.length + body.length + tail.length
    if (size > INLINE_LIMIT) return false
    if (this.end + size > this.bytes.length) this.compact(size)
    const at = this.end
    const bytes = this.bytes
    const end = latin1Into(bytes, latin1Into(bytes, latin1Into(bytes, at, head), body), tail)
    if (end < 0) return false
    this.start[record] = at
    this.length[record] = size
    this.end = end
    return true
  }

  /** Copies the live texts to a new buffer with room for `need` more bytes and as many again. */
  private compact(need: number): void {
    const live = this.end - this.holes
    let size = INITIAL_BYTES
    while (size < 2 * (live + need)) size *= 2
    const from = this.bytes
    const to = this.spare?.length === size ? this.spare : Buffer.alloc(size)
    let end = 0
    for (let record = 0; record < this.start.length; record++) {
      const at = this.start[record] as number
      if (at < 0) continue
      const length = this.length[record] as number
      from.copy(to, end, at, at + length)
      this.start[record] = end
      end += length
    }
    this.bytes = to
    this.spare = from.length === size ? from : undefined
    this.end = end
    this.holes = 0
  }
}
