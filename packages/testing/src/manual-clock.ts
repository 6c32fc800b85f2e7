import type { Clock } from '@shallot/core'
import { type Sleeper, SleeperHeap } from './sleeper-heap.js'

/** A {@link Clock} on virtual time that tests move by hand. */
export interface ManualClock extends Clock {
  /** Calls `fire` once `ms` of virtual time have passed, unless the returned function is called first. */
  timer(ms: number, fire: () => void): () => void
  /** Moves time forward by `ms`, waking every sleeper due by then in deadline order (ties in call order). */
  advance(ms: number): Promise<void>
  /** Moves time to the next deadline, again and again, until nobody sleeps. Returns the virtual ms that passed. */
  runAll(options?: { maxSteps?: number }): Promise<number>
  /** How many sleeps are waiting. */
  readonly pending: number
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve()
  await new Promise<void>((resolve) => setImmediate(resolve))
}

/**
 * Virtual time: `sleep` resolves only when a test calls `advance` or `runAll`, so tests never
 * wait for real and timing is exact. Aborted sleeps reject with the signal's reason and vanish.
 *
 * @example
 * const clock = manualClock()
 * const slept = clock.sleep(1000)
 * await clock.advance(1000) // slept resolves now
 */
export function manualClock(start = 0): ManualClock {
  let now = start
  let seq = 0
  const sleepers = new SleeperHeap()
  const dueIn = (ms: number) => {
    const delay = Math.max(0, ms)
    // NaN is no delay, as for setTimeout: a NaN deadline would make every later `now()` NaN.
    return now + (Number.isNaN(delay) ? 0 : delay)
  }

  const wakeDue = async (until: number) => {
    for (;;) {
      const first = sleepers.peek()
      if (first === undefined || first.at > until) break
      sleepers.remove(first)
      now = Math.max(now, first.at)
      first.wake()
      await flush()
    }
    now = Math.max(now, until)
  }

  return {
    now: () => now,
    sleep(ms: number, signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason)
      return new Promise<void>((resolve, reject) => {
        if (signal === undefined) {
          sleepers.push({ at: dueIn(ms), seq: seq++, wake: resolve, index: -1 })
          return
        }
        const sleeper: Sleeper = {
          at: dueIn(ms),
          seq: seq++,
          wake: () => {
            signal.removeEventListener('abort', onAbort)
            resolve()
          },
          index: -1,
        }
        const onAbort = () => {
          sleepers.remove(sleeper)
          reject(signal.reason)
        }
        sleepers.push(sleeper)
        signal.addEventListener('abort', onAbort, { once: true })
      })
    },
    timer(ms: number, fire: () => void): () => void {
      const sleeper: Sleeper = { at: dueIn(ms), seq: seq++, wake: fire, index: -1 }
      sleepers.push(sleeper)
      return () => sleepers.remove(sleeper)
    },
    async advance(ms: number) {
      await flush()
      await wakeDue(now + ms)
      await flush()
    },
    async runAll({ maxSteps = 100_000 } = {}) {
      const from = now
      await flush()
      for (let steps = 0; ; steps++) {
        const next = sleepers.peek()
        if (next === undefined) break
        if (steps >= maxSteps)
          throw new Error(`manualClock.runAll(): still ${sleepers.size} sleepers after ${maxSteps} steps; something sleeps in a loop`)
        await wakeDue(next.at)
        await flush()
      }
      return now - from
    },
    get pending() {
      return sleepers.size
    },
  }
}
