/** One pending sleep or timer of a manual clock. */
export interface Sleeper {
  /** Virtual time it is due at. */
  readonly at: number
  /** Registration order: of two sleepers due at the same instant, the one registered first wakes first. */
  readonly seq: number
  readonly wake: () => void
  /** Its slot in the heap; -1 once it woke or was cancelled. */
  index: number
}

const before = (a: Sleeper, b: Sleeper) => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/**
 * The pending sleepers of a manual clock as a binary min-heap on (deadline, registration), so the next
 * one to wake is found in O(1), and adding, waking or cancelling one costs O(log n) with no array copied:
 * a cancel knows its slot, so it needs neither a search nor a splice.
 *
 * @example
 * const heap = new SleeperHeap()
 * heap.push({ at: 10, seq: 0, wake, index: -1 })
 * heap.peek()?.at // 10
 */
export class SleeperHeap {
  readonly #items: Sleeper[] = []

  get size(): number {
    return this.#items.length
  }

  /** The sleeper due first (ties: registered first), left in place. */
  peek(): Sleeper | undefined {
    return this.#items[0]
  }

  push(sleeper: Sleeper): void {
    sleeper.index = this.#items.length
    this.#items.push(sleeper)
    this.#up(sleeper.index)
  }

  /** Takes out the sleeper due first. */
  pop(): Sleeper | undefined {
    const first = this.#items[0]
    if (first !== undefined) this.remove(first)
    return first
  }

  /** Takes `sleeper` out; nothing happens if it already woke or was cancelled. */
  remove(sleeper: Sleeper): void {
    const index = sleeper.index
    if (index < 0) return
    sleeper.index = -1
    const items = this.#items
    const last = items.pop() as Sleeper
    if (last === sleeper) return
    items[index] = last
    last.index = index
    this.#up(index)
    this.#down(last.index)
  }

  #up(index: number): void {
    const items = this.#items
    const moving = items[index] as Sleeper
    while (index > 0) {
      const parentIndex = (index - 1) >> 1
      const parent = items[parentIndex] as Sleeper
      if (!before(moving, parent)) break
      items[index] = parent
      parent.index = index
      index = parentIndex
    }
    items[index] = moving
    moving.index = index
  }

  #down(index: number): void {
    const items = this.#items
    const length = items.length
    const moving = items[index] as Sleeper
    for (;;) {
      const left = 2 * index + 1
      if (left >= length) break
      const right = left + 1
      let child = left
      if (right < length && before(items[right] as Sleeper, items[left] as Sleeper)) child = right
      const smaller = items[child] as Sleeper
      if (!before(smaller, moving)) break
      items[index] = smaller
      smaller.index = index
      index = child
    }
    items[index] = moving
    moving.index = index
  }
}
