/** A call waiting for a slot: `admit` hands it the slot that just came free. */
export interface Waiter {
  admit(): void
}

/**
 * The slots and the queue of one key, with no timers and no I/O. A slot that comes free goes to the
 * longest waiter directly, so `running` never dips while somebody waits and no newcomer can jump
 * the queue. A `Set` keeps arrival order and lets a cancelled waiter leave in O(1).
 */
export class Compartment {
  running = 0
  readonly waiting = new Set<Waiter>()

  constructor(
    readonly limit: number,
    readonly capacity: number,
  ) {}

  /** Takes a free slot if there is one. */
  tryAcquire(): boolean {
    if (this.running >= this.limit) return false
    this.running++
    return true
  }

  /** True when a newcomer could wait here. */
  hasRoom(): boolean {
    return this.waiting.size < this.capacity
  }

  /** Frees a slot: the longest waiter gets it. Answers true when the compartment is idle and may be forgotten. */
  release(): boolean {
    for (const first of this.waiting) {
      this.waiting.delete(first)
      first.admit()
      return false
    }
    this.running--
    return this.running === 0
  }
}
