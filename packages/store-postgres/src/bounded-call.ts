import { type Clock, ToolError } from '@shallot/core'
import { postgresUnavailable } from './store-unavailable.js'

/**
 * Runs one store operation with a deadline: resolves with its answer, or rejects with
 * `store_unavailable` when it fails or takes longer than `timeoutMs`. `work` receives a signal that
 * aborts at the deadline, so it can stop before it starts a transaction. An answer that arrives
 * after the deadline goes to `late`, so the caller can undo what it did (release a lease, give tokens back).
 */
export type BoundedCall = <T>(op: string, work: (signal: AbortSignal) => Promise<T>, late?: (value: T) => void) => Promise<T>

/**
 * Makes the {@link BoundedCall} of a store: deadlines wait on `clock` (the stacks' clock), so tests
 * on a manual clock decide when a silent server times out.
 *
 * @example
 * const bounded = boundedCall(systemClock, 1000)
 * const rows = await bounded('retryBudget.available', () => pool.query(sql))
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
          reject(postgresUnavailable(op, `no answer within ${timeoutMs} ms`))
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
          reject(ToolError.is(err) ? err : postgresUnavailable(op, 'PostgreSQL refused or lost the query', err))
        },
      )
    })
  }
}
