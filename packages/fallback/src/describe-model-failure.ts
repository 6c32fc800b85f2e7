import { ToolError } from '@shallot/core'

const WHAT: Readonly<Record<string, string>> = {
  rate_limited: 'rate limited by the provider',
  overloaded: 'the provider is overloaded',
  upstream_error: 'the provider failed',
  network_error: 'the connection to the provider failed',
}

const statusOf = (err: unknown): number | undefined => {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { status?: unknown; statusCode?: unknown }
  return typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
}

/**
 * How `fallback_exhausted` names one model's failure, in the words core's own chain uses
 * ("429 rate limited by the provider (slow down), Retry-After 1 s"), so both paths report alike.
 * A copy of core's `describeModelFailure`, which the author kit does not export yet (issue 35, step 3).
 *
 * @example
 * describeModelFailure(Object.assign(new Error('Service Unavailable'), { status: 503 })) // '503 Service Unavailable'
 */
export function describeModelFailure(err: unknown): string {
  const wait = (ms: number | undefined) => (ms === undefined ? '' : `, Retry-After ${Number((ms / 1000).toFixed(3))} s`)
  if (ToolError.is(err)) {
    const status = typeof err.details?.status === 'number' ? `${err.details.status} ` : ''
    const said =
      typeof err.details?.providerMessage === 'string' && err.details.providerMessage !== '' ? ` (${err.details.providerMessage})` : ''
    const what = Object.hasOwn(WHAT, err.code) ? WHAT[err.code] : undefined
    return what === undefined ? `${status}${err.message}${wait(err.retryAfterMs)}` : `${status}${what}${said}${wait(err.retryAfterMs)}`
  }
  const status = statusOf(err)
  const message = err instanceof Error ? err.message : String(err)
  return status === undefined ? message : `${status} ${message}`
}
