import { abortReason, onAbort } from './cancellation.js'

const noop = () => {}

/**
 * Identical work in flight in this process, by key: the first caller leads it, callers that come
 * while it runs wait for the outcome it lands instead of doing the work again, and the key is free
 * the moment the outcome lands, so only running work is ever shared.
 *
 * @example
 * const flights = new SingleFlight<string>()
 * const running = flights.get(key)
 * if (running !== undefined) return running.wait(ctx.signal)
 * const flight = flights.lead(key)
 * fetchPage(url).then((page) => flight.land(page), (err) => flight.fail(err))
 */
export class SingleFlight<T> {
  readonly #flights = new Map<string, Flight<T>>()

  /** The flight running under `key`, or `undefined` when none is. */
  get(key: string): Flight<T> | undefined {
    return this.#flights.get(key)
  }

  /** Starts the flight of `key`, which the caller leads until it lands, fails or is abandoned. */
  lead(key: string): Flight<T> {
    const flight: Flight<T> = new Flight(() => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key)
    })
    this.#flights.set(key, flight)
    return flight
  }
}

/** One piece of work in flight: what its duplicates wait for. */
export class Flight<T> {
  /** How many callers wait in {@link Flight.wait} right now. */
  waiting = 0
  readonly #forget: () => void
  /** Made when first read or on abandon: work that follows its leader's own signal (idempotency's) never needs one. */
  #stop: AbortController | undefined
  readonly #outcome: Promise<T>
  #resolve: (outcome: T) => void = noop
  #reject: (err: unknown) => void = noop

  constructor(forget: () => void) {
    this.#forget = forget
    this.#outcome = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    // A failure nobody waits for has nobody to reach.
    this.#outcome.catch(noop)
  }

  /** Aborts once the flight is abandoned: nobody waits for the work any more, so it may stop. */
  get signal(): AbortSignal {
    this.#stop ??= new AbortController()
    return this.#stop.signal
  }

  /** The work is done: the key is free, and every waiter gets `outcome`. Only the first land or fail counts. */
  land(outcome: T): void {
    this.#forget()
    this.#resolve(outcome)
  }

  /** The work failed: the key is free, and every waiter rejects with `err`. */
  fail(err: unknown): void {
    this.#forget()
    this.#reject(err)
  }

  /** Nobody waits any more: the key is free for a new flight, and {@link Flight.signal} aborts with `reason`. */
  abandon(reason: unknown): void {
    this.#forget()
    this.#stop ??= new AbortController()
    this.#stop.abort(reason)
  }

  /**
   * Waits for the outcome, or rejects with `signal`'s abort reason as soon as it aborts: the caller
   * leaves, the work goes on for the others, and `onLeave` hears how many still wait.
   */
  wait(signal: AbortSignal, onLeave?: (left: number) => void): Promise<T> {
    this.waiting++
    return new Promise<T>((resolve, reject) => {
      let waiting = true
      const off = onAbort(signal, () => {
        if (!waiting) return
        waiting = false
        this.waiting--
        reject(abortReason(signal))
        onLeave?.(this.waiting)
      })
      this.#outcome.then(
        (outcome) => {
          if (!waiting) return
          waiting = false
          this.waiting--
          off()
          resolve(outcome)
        },
        (err: unknown) => {
          if (!waiting) return
          waiting = false
          this.waiting--
          off()
          reject(err)
        },
      )
    })
  }
}
