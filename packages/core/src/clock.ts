import type { Clock } from './types.js'

/**
 * Waits `ms` with a real timer, abortable by `signal`. Rejects with `signal.reason` on abort;
 * on every exit path the timer is cleared and the listener removed.
 */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason)
  if (ms <= 0 && signal === undefined) return Promise.resolve()
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      },
      Math.max(0, ms),
    )
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * The real clock: monotonic `now()` from `performance.now()`, so moving the wall clock changes nothing.
 *
 * @example
 * await systemClock.sleep(250, signal)
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  sleep,
  timer(ms, fire) {
    const handle = setTimeout(fire, Math.max(0, ms))
    return () => clearTimeout(handle)
  },
}
