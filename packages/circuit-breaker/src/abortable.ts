import { abortReason, type LoopError, type ToolError } from '@shallot/core'

const ignore = () => {}

/** Thrown by {@link abortable} when the signal aborted first; carries the error the call should end with. */
export class Aborted {
  constructor(readonly reason: ToolError | LoopError) {}
}

/**
 * Waits for `promise`, or stops waiting as soon as `signal` aborts (rejecting with {@link Aborted}).
 * The abandoned promise's rejection is swallowed; the listener is removed on every path.
 *
 * @example
 * const state = await abortable(store.update(key, change), ctx.signal)
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.then(ignore, ignore)
    return Promise.reject(new Aborted(abortReason(signal)))
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.then(ignore, ignore)
      reject(new Aborted(abortReason(signal)))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      },
    )
  })
}
