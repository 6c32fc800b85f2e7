import type { Logger } from '@shallot/core'
import { callListener } from '@shallot/core/kit'

/**
 * The user's `onStateChange`, told of one change. A listener that throws, or an async one that
 * rejects, is logged once per breaker and never changes the call: unhandled, a rejection would end
 * the process.
 */
export function stateListener<C extends { readonly key: string }>(
  listener: ((change: C) => void) | undefined,
): (change: C, log: Logger) => void {
  if (listener === undefined) return () => {}
  let failed = false
  const threw = (err: unknown, key: string, log: Logger) => {
    if (failed) return
    failed = true
    log.error({ key, err }, 'circuit breaker onStateChange threw; the call goes on, and its later throws are not logged')
  }
  return (change, log) => callListener(listener, change, (err) => threw(err, change.key, log))
}
