import type { Clock } from '@shallot/core'

interface Sleeper {
  at: number
  seq: number
  resolve: () => void
}

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
  const sleepers: Sleeper[] = []

  const wakeDue = async (until: number) => {
    for (;;) {
      sleepers.sort((a, b) => a.at - b.at || a.seq - b.seq)
      const first = sleepers[0]
      if (first === undefined || first.at > until) break
      sleepers.shift()
      now = Math.max(now, first.at)
      first.resolve()
      await flush()
    }
    now = Math.max(now, until)
  }

  return {
    now: () => now,
    sleep(ms: number, signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason)
      return new Promise<void>((resolve, reject) => {
        const sleeper: Sleeper = {
          at: now + Math.max(0, ms),
          seq: seq++,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort)
            resolve()
          },
        }
        const onAbort = () => {
          const index = sleepers.indexOf(sleeper)
          if (index >= 0) sleepers.splice(index, 1)
          reject(signal?.reason)
        }
        sleepers.push(sleeper)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    },
    timer(ms: number, fire: () => void): () => void {
      const sleeper: Sleeper = { at: now + Math.max(0, ms), seq: seq++, resolve: fire }
      sleepers.push(sleeper)
      return () => {
        const index = sleepers.indexOf(sleeper)
        if (index >= 0) sleepers.splice(index, 1)
      }
    },
    async advance(ms: number) {
      await flush()
      await wakeDue(now + ms)
      await flush()
    },
    async runAll({ maxSteps = 100_000 } = {}) {
      const from = now
      await flush()
      for (let steps = 0; sleepers.length > 0; steps++) {
        if (steps >= maxSteps)
          throw new Error(`manualClock.runAll(): still ${sleepers.length} sleepers after ${maxSteps} steps; something sleeps in a loop`)
        const next = Math.min(...sleepers.map((s) => s.at))
        await wakeDue(next)
        await flush()
      }
      return now - from
    },
    get pending() {
      return sleepers.length
    },
  }
}
