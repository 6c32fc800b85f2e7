import { type Clock, ToolError } from '@shallot/core'
import { redisUnavailable } from './store-unavailable.js'

/**
 * Runs one store operation with a deadline: resolves with its answer, or rejects with
 * `store_unavailable` when it fails or takes longer than `timeoutMs`. `work` receives a signal that
 * aborts at the deadline, so a loop inside it can stop. An answer that arrives after the deadline
 * goes to `late`, so the caller can undo what it did (release a lease, give tokens back).
 */
export type BoundedCall = <T>(op: string, work: (signal: AbortSignal) => Promise<T>, late?: (value: T) => void) => Promise<T>

/**
 * Makes the {@link BoundedCall} of a store: deadlines wait on `clock` (the stacks' clock), so tests
 * on a manual clock decide when a silent Redis times out.
 *
 * @example
 * const bounded = boundedCall(systemClock, 200)
 * const reply = await bounded('circuit-breaker.read', () => commands.breakerRead(key, ''))
 */
export function boundedCall(clock: Clock, timeoutMs: number): BoundedCall {
  return function bounded<T>(op: string, work: (signal: AbortSignal) => Promise<T>, late?: (value: T) => void): Promise<T> {
    const deadline = new AbortController()
    return new Promise<T>((resolve, reject) => {
      let settled = false
      clock.sleep(timeoutMs, deadline.signal).then(
        () => {
          if (settled) return
          settled = true
          deadline.abort()
          reject(redisUnavailable(op, `no answer within ${timeoutMs} ms`))
        },
        () => {},
      )
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
          deadline.abort()
          resolve(value)
        },
        (err: unknown) => {
          if (settled) return
          settled = true
          deadline.abort()
          reject(ToolError.is(err) ? err : redisUnavailable(op, 'Redis refused or lost the command', err))
        },
      )
    })
  }
}
