/** No record: the end of the list, or a record that is not in it. */
export const NONE = -1

/**
 * Record numbers in order of use, least recently used at `head`, as links in two int32 arrays: a
 * use, an append and a removal are each O(1), and the links are numbers the collector never reads.
 *
 * @example
 * const recency = new RecencyList(256)
 * recency.append(3)
 * recency.append(5)
 * recency.touch(3) // 5 is now the least recently used: recency.head === 5
 */
export class RecencyList {
  head = NONE
  tail = NONE
  private older: Int32Array
  private newer: Int32Array

  constructor(records: number) {
    this.older = new Int32Array(records).fill(NONE)
    this.newer = new Int32Array(records).fill(NONE)
  }

  /** True when `record` is in the list. */
  has(record: number): boolean {
    return this.older[record] !== NONE || this.head === record
  }

  /** Adds `record`, which is not in the list, as the most recently used. */
  append(record: number): void {
    this.older[record] = this.tail
    this.newer[record] = NONE
    if (this.tail === NONE) this.head = record
    else this.newer[this.tail] = record
    this.tail = record
  }

  /** Takes `record`, which is in the list, out. */
  remove(record: number): void {
    const older = this.older[record] as number
    const newer = this.newer[record] as number
    if (older === NONE) this.head = newer
    else this.newer[older] = newer
    if (newer === NONE) this.tail = older
    else this.older[newer] = older
    this.older[record] = NONE
    this.newer[record] = NONE
  }

  /** Makes `record`, which is in the list, the most recently used. */
  touch(record: number): void {
    if (record === this.tail) return
    this.remove(record)
    this.append(record)
  }

  /** Room for records `0 … records - 1` (more than now), the order kept. */
  grow(records: number): void {
    const older = new Int32Array(records).fill(NONE)
    older.set(this.older)
    const newer = new Int32Array(records).fill(NONE)
    newer.set(this.newer)
    this.older = older
    this.newer = newer
  }
}
