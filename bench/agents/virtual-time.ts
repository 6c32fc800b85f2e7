/**
 * Virtual time for a whole process: `setTimeout`, `setInterval`, `Date.now` and `performance.now`
 * are replaced, so every framework's backoff, Retry-After wait and deadline is measured but costs
 * nothing real. Time only moves when the process is idle: no request to the model endpoint in
 * flight (counted by the `fetch` wrapper) and a few real event-loop turns without progress. Then
 * the earliest timer fires, and the clock jumps to its due time.
 */

type Callback = (...args: unknown[]) => void

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  dateNow: Date.now,
  performanceNow: performance.now.bind(performance),
  fetch: globalThis.fetch,
}

/** A `NodeJS.Timeout` look-alike: libraries call `unref`, `ref`, `refresh`, `hasRef` and coerce it to a number. */
class VirtualTimer {
  constructor(
    readonly id: number,
    public due: number,
    readonly delay: number,
    readonly fn: Callback,
    readonly args: unknown[],
    readonly repeat: boolean,
  ) {}
  ref() {
    return this
  }
  unref() {
    return this
  }
  hasRef() {
    return true
  }
  refresh() {
    clock.rearm(this)
    return this
  }
  close() {
    clock.cancel(this)
    return this
  }
  [Symbol.toPrimitive]() {
    return this.id
  }
}

const EPOCH = Date.UTC(2026, 0, 1)

class VirtualClock {
  now = 0
  inFlight = 0
  #nextId = 1
  readonly #timers = new Map<number, VirtualTimer>()

  schedule(fn: Callback, ms: unknown, args: unknown[], repeat: boolean): VirtualTimer {
    const delay = Math.max(typeof ms === 'number' && Number.isFinite(ms) ? ms : 0, repeat ? 1 : 0)
    const timer = new VirtualTimer(this.#nextId++, this.now + delay, delay, fn, args, repeat)
    this.#timers.set(timer.id, timer)
    return timer
  }

  rearm(timer: VirtualTimer): void {
    timer.due = this.now + timer.delay
    this.#timers.set(timer.id, timer)
  }

  cancel(handle: unknown): void {
    if (handle instanceof VirtualTimer) this.#timers.delete(handle.id)
    else if (typeof handle === 'number') this.#timers.delete(handle)
  }

  /** The timer due first (insertion order breaks ties). */
  earliest(): VirtualTimer | undefined {
    let first: VirtualTimer | undefined
    for (const timer of this.#timers.values()) if (first === undefined || timer.due < first.due) first = timer
    return first
  }

  fire(timer: VirtualTimer): void {
    this.now = Math.max(this.now, timer.due)
    if (timer.repeat) timer.due = this.now + timer.delay
    else this.#timers.delete(timer.id)
    timer.fn(...timer.args)
  }
}

export const clock = new VirtualClock()

const turn = () => new Promise<void>((resolve) => real.setImmediate(resolve))
const pause = () => new Promise<void>((resolve) => real.setTimeout(resolve, 1))

/**
 * Replaces fetch by one that counts requests in flight and reads each body whole before handing it
 * back, so "the process is idle" never misses a response still on its way.
 */
async function countingFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> {
  clock.inFlight++
  try {
    const response = await real.fetch(input, init)
    const body = await response.arrayBuffer()
    return new Response(response.status === 204 ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    })
  } finally {
    clock.inFlight--
  }
}

let installed = false

/** Puts the virtual timers, clocks and the counting fetch in place of the real ones. Idempotent. */
export function installVirtualTime(): void {
  if (installed) return
  installed = true
  const g = globalThis as Record<string, unknown>
  g.setTimeout = (fn: Callback, ms?: number, ...args: unknown[]) => clock.schedule(fn, ms, args, false)
  g.setInterval = (fn: Callback, ms?: number, ...args: unknown[]) => clock.schedule(fn, ms, args, true)
  g.clearTimeout = (handle: unknown) => clock.cancel(handle)
  g.clearInterval = (handle: unknown) => clock.cancel(handle)
  g.fetch = countingFetch
  Date.now = () => EPOCH + clock.now
  Object.defineProperty(performance, 'now', { value: () => clock.now, configurable: true, writable: true })
}

/** Puts the real ones back. */
export function uninstallVirtualTime(): void {
  if (!installed) return
  installed = false
  const g = globalThis as Record<string, unknown>
  g.setTimeout = real.setTimeout
  g.setInterval = real.setInterval
  g.clearTimeout = real.clearTimeout
  g.clearInterval = real.clearInterval
  g.fetch = real.fetch
  Date.now = real.dateNow
  Object.defineProperty(performance, 'now', { value: real.performanceNow, configurable: true, writable: true })
}

/** Waits (really) until nothing is in flight and a few event-loop turns pass. */
async function quiesce(): Promise<void> {
  for (let quiet = 0; quiet < 3; ) {
    if (clock.inFlight > 0) {
      quiet = 0
      await pause()
    } else {
      quiet++
      await turn()
    }
  }
}

export interface Driven<T> {
  value?: T
  error?: unknown
  settled: boolean
  /** Virtual ms from the start to the settlement (or to the cap). */
  elapsedMs: number
}

/**
 * Drives `start()` to its end in virtual time: whenever the process is idle, the earliest timer
 * fires. Past `capMs` of virtual time (or idle with no timer left) the run counts as hung; `onHung`
 * aborts it so it stops spending. A timer due past the cap counts as none.
 */
export async function drive<T>(start: () => Promise<T>, capMs: number, onHung: () => void): Promise<Driven<T>> {
  // Timers a finished or abandoned episode left behind stay: process-wide schedulers (core's deadline
  // heap, undici's clock) keep one armed timer each and would stop for good if it vanished.
  const startedAt = clock.now
  const result: Driven<T> = { settled: false, elapsedMs: 0 }
  start().then(
    (value) => {
      result.settled = true
      result.value = value
      result.elapsedMs = clock.now - startedAt
    },
    (error: unknown) => {
      result.settled = true
      result.error = error
      result.elapsedMs = clock.now - startedAt
    },
  )
  while (!result.settled) {
    await quiesce()
    if (result.settled) break
    const next = clock.earliest()
    if (next === undefined || next.due - startedAt > capMs) {
      clock.now = startedAt + capMs
      result.elapsedMs = capMs
      onHung()
      await quiesce()
      return { settled: false, elapsedMs: capMs }
    }
    clock.fire(next)
  }
  return result
}
