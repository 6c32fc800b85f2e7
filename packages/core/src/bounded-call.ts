import { ToolError } from './errors.js'
import type { Clock } from './types.js'

/**
 * Runs one store operation with a deadline: resolves with its answer, or rejects with the store's
 * `unavailable` error when it fails or takes longer than `timeoutMs`. `work` receives a signal that
 * aborts at the deadline, so it can stop before it starts more work. An answer that arrives after the
 * deadline goes to `late`, so the caller can undo what it did (release a lease, give tokens back).
 */
export type BoundedCall = <T>(op: string, work: (signal: AbortSignal) => Promise<T>, late?: (value: T) => void) => Promise<T>

/** What a store rejects with: its own `store_unavailable` error for `op`, with the reason and the backend's error as cause. */
export type StoreUnavailable = (op: string, why: string, cause?: unknown) => ToolError

/**
 * Makes the {@link BoundedCall} of a store: deadlines wait on `clock` (the stacks' clock), so tests on a
 * manual clock decide when a silent server times out. `refused` is the reason given when the backend
 * rejects (its error stays the `cause`, for logs: it may name hosts).
 *
 * @example
 * const bounded = boundedCall(systemClock, 200, redisUnavailable, 'Redis refused or lost the command')
 * const reply = await bounded('circuit-breaker.read', () => commands.breakerRead(key, ''))
 */
export function boundedCall(clock: Clock, timeoutMs: number, unavailable: StoreUnavailable, refused: string): BoundedCall {
  return function bounded<T>(op: string, work: (signal: AbortSignal) => Promise<T>, late?: (value: T) => void): Promise<T> {
    const deadline = new AbortController()
    return new Promise<T>((resolve, reject) => {
      let settled = false
      // Only the deadline aborts the signal `work` holds; an answer just stops the wait. A store
      // operation takes a fraction of a millisecond, and an abort (an exception object and an event)
      // would cost it as much again.
      const stopWaiting = waitFor(clock, timeoutMs, () => {
        if (settled) return
        settled = true
        deadline.abort()
        reject(unavailable(op, `no answer within ${timeoutMs} ms`))
      })
      let running: Promise<T>
      try {
        running = work(deadline.signal)
      } catch (err) {
        running = Promise.reject(err)
      }
      running.then(
        (value) => {
          if (settled) {
            late?.(value)
            return
          }
          settled = true
          stopWaiting()
          resolve(value)
        },
        (err: unknown) => {
          if (settled) return
          settled = true
          stopWaiting()
          reject(ToolError.is(err) ? err : unavailable(op, refused, err))
        },
      )
    })
  }
}

/** Calls `fire` after `ms` on `clock`; the function it returns stops the wait. */
function waitFor(clock: Clock, ms: number, fire: () => void): () => void {
  if (clock.timer !== undefined) return clock.timer(ms, fire)
  const stop = new AbortController()
  clock.sleep(ms, stop.signal).then(fire, () => {})
  return () => stop.abort()
}
