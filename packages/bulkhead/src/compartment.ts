/** A call waiting for a slot: `admit` hands it the slot that just came free. */
export interface Waiter {
  admit(): void
}

/**
 * The slots and the queue of one key, with no timers and no I/O. A slot that comes free goes to the
 * longest waiter directly, so `running` never dips while somebody waits and no newcomer can jump
 * the queue. A `Set` keeps arrival order and lets a cancelled waiter leave in O(1); it is created
 * only when somebody first waits, so a key that never queues costs one small object.
 */
export class Compartment {
  running = 0
  #waiting: Set<Waiter> | undefined

  constructor(
    readonly limit: number,
    readonly capacity: number,
  ) {}

  /** Calls waiting now. */
  get queued(): number {
    return this.#waiting?.size ?? 0
  }

  /** Takes a free slot if there is one. */
  tryAcquire(): boolean {
    if (this.running >= this.limit) return false
    this.running++
    return true
  }

  /** True when a newcomer could wait here. */
  hasRoom(): boolean {
    return this.queued < this.capacity
  }

  /** Puts `waiter` at the end of the queue. */
  enqueue(waiter: Waiter): void {
    this.#waiting ??= new Set()
    this.#waiting.add(waiter)
  }

  /** Takes `waiter` out of the queue (it gave up); a waiter already admitted is not there any more. */
  leave(waiter: Waiter): void {
    this.#waiting?.delete(waiter)
  }

  /** Frees a slot: the longest waiter gets it. Answers true when the compartment is idle and may be forgotten. */
  release(): boolean {
    const waiting = this.#waiting
    if (waiting !== undefined) {
      for (const first of waiting) {
        waiting.delete(first)
        first.admit()
        return false
      }
    }
    this.running--
    return this.running === 0
  }
}
