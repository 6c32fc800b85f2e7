/**
 * Calls a user's listener with `arg`. A throw, or the rejection of the promise an async listener
 * returns, goes to `failed`: never into the call that told it, never an unhandled rejection (which
 * would end the process).
 *
 * @example
 * callListener(options.onChange, change, (err) => log.error({ err }, 'onChange threw'))
 */
export function callListener<A>(listener: (arg: A) => unknown, arg: A, failed: (err: unknown) => void): void {
  let returned: unknown
  try {
    returned = listener(arg)
  } catch (err) {
    failed(err)
    return
  }
  // Promise.resolve: a hostile thenable whose then() throws becomes a rejection that reaches `failed` too.
  if (typeof returned === 'object' && returned !== null && typeof (returned as { then?: unknown }).then === 'function')
    Promise.resolve(returned).then(undefined, failed)
}
