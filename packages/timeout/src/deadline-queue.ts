/** The process's deadline queues for @shallot/timeout: every deadline of one duration shares one timer. */
/** Something with a deadline in a {@link DeadlineQueue}: linked in place, so joining and leaving are constant time. */
export interface Expiring {
  /** `performance.now()` at which it expires. */
  deadline: number
  prevDue: Expiring | undefined
  nextDue: Expiring | undefined
  /** The queue it is in, or `undefined` once it left (expired or cancelled). */
  queue: DeadlineQueue | undefined
  /** Called once, by the queue's timer, when the deadline has passed. */
  expire(): void
}

// libuv's timers count whole milliseconds from a loop time that can lag performance.now(); a timer may fire up to 1 ms early.
const TIMER_SLACK_MS = 1

/**
 * Deadlines of one duration on the real clock, in the order they were set (so in deadline order:
 * `performance.now()` never goes back), driven by one timer for all of them.
 *
 * Joining is a link at the tail; leaving is an unlink. The timer is created when the first deadline
 * joins an empty queue and is not touched when deadlines leave: when it fires it expires whatever
 * is due and re-arms for the next pending deadline, or disappears when none is pending. So the cost
 * of a call does not depend on how many calls there are, and is never a timer of its own.
 *
 * The timer holds the process open only while a deadline is pending (a pending deadline is work the
 * process still has to do); once the queue is empty it is unref'd, and it fires at most once more.
 */
export class DeadlineQueue {
  #head: Expiring | undefined = undefined
  #tail: Expiring | undefined = undefined
  #timer: ReturnType<typeof setTimeout> | undefined = undefined
  #holdsProcess = false
  /** The `setTimeout` the timer came from: a test that swaps timers (fake ones, then real) must not strand the queue on a dead one. */
  #armedWith: typeof setTimeout | undefined = undefined
  readonly #fire = () => this.#expireDue()

  constructor(readonly ms: number) {}

  /** Whether no deadline is pending. */
  get empty(): boolean {
    return this.#head === undefined
  }

  add(item: Expiring, now: number): void {
    item.deadline = now + this.ms
    item.queue = this
    item.nextDue = undefined
    item.prevDue = this.#tail
    if (this.#tail === undefined) this.#head = item
    else this.#tail.nextDue = item
    this.#tail = item
    if (this.#timer === undefined || this.#armedWith !== setTimeout) this.#arm(this.ms)
    else if (!this.#holdsProcess) {
      this.#timer.ref()
      this.#holdsProcess = true
    }
  }

  remove(item: Expiring): void {
    if (item.queue !== this) return
    this.#unlink(item)
    if (this.#head === undefined && this.#holdsProcess) {
      this.#timer?.unref()
      this.#holdsProcess = false
    }
  }

  #unlink(item: Expiring): void {
    const { prevDue, nextDue } = item
    if (prevDue === undefined) this.#head = nextDue
    else prevDue.nextDue = nextDue
    if (nextDue === undefined) this.#tail = prevDue
    else nextDue.prevDue = prevDue
    item.prevDue = undefined
    item.nextDue = undefined
    item.queue = undefined
  }

  #arm(delay: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#armedWith = setTimeout
    this.#timer = setTimeout(this.#fire, Math.max(0, delay))
    this.#holdsProcess = true
  }

  #expireDue(): void {
    this.#timer = undefined
    this.#holdsProcess = false
    const now = performance.now()
    for (let item = this.#head; item !== undefined && item.deadline <= now + TIMER_SLACK_MS; item = this.#head) {
      this.#unlink(item)
      try {
        item.expire()
      } catch {
        // One deadline's failure must not keep the others from expiring.
      }
    }
    if (this.#head !== undefined) this.#arm(this.#head.deadline - performance.now())
  }
}

const queues = new Map<number, DeadlineQueue>()

/** The process's one queue for deadlines of `ms` on the real clock. */
export function deadlineQueue(ms: number): DeadlineQueue {
  let queue = queues.get(ms)
  if (queue === undefined) {
    queue = new DeadlineQueue(ms)
    queues.set(ms, queue)
  }
  return queue
}
