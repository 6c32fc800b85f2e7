/**
 * `make(...args)` with no stack trace captured for the errors it builds: `Error.stackTraceLimit` is 0
 * only for that call and is restored however it ends. For errors built by the thousand whose frames
 * nobody reads (a simulation's injected faults, a classified error whose cause keeps the real stack):
 * capturing a trace through optimized frames costs 10–15 µs.
 *
 * @example
 * const fault = withoutStackTrace(faultError, 'timeout', 1)
 */
export function withoutStackTrace<A extends unknown[], R>(make: (...args: A) => R, ...args: A): R {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make(...args)
  } finally {
    Error.stackTraceLimit = limit
  }
}
