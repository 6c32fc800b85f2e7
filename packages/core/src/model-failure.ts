import { LoopError, ToolError } from './errors.js'
import { isConnectionFailure } from './request-fate.js'

/** Whether a model failure is worth another try: timeouts, 408/429/5xx, dropped connections. */
export function isTransientModelError(err: unknown): boolean {
  if (ToolError.is(err)) return err.retryable
  if (typeof err !== 'object' || err === null) return false
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown; cause?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined) return status === 408 || status === 429 || status >= 500
  if (typeof e.code === 'string' && isConnectionFailure(e.code)) return true
  if (e.name === 'TimeoutError') return true
  return e.cause !== undefined && e.cause !== err && isTransientModelError(e.cause)
}

/** How the report and the events name a failure: "429 rate limited by the provider, Retry-After 2 s". */
export function describeModelFailure(err: unknown): string {
  const wait = (ms: number | undefined) => (ms === undefined ? '' : `, Retry-After ${Number((ms / 1000).toFixed(3))} s`)
  if (ToolError.is(err)) {
    const status = typeof err.details?.status === 'number' ? `${err.details.status} ` : ''
    const said =
      typeof err.details?.providerMessage === 'string' && err.details.providerMessage !== '' ? ` (${err.details.providerMessage})` : ''
    const what = WHAT[err.code]
    return what === undefined ? `${status}${err.message}${wait(err.retryAfterMs)}` : `${status}${what}${said}${wait(err.retryAfterMs)}`
  }
  const e = (typeof err === 'object' && err !== null ? err : {}) as { status?: unknown; statusCode?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  const message = err instanceof Error ? err.message : String(err)
  return status === undefined ? message : `${status} ${message}`
}

const CODE = /^[A-Za-z0-9_.-]{1,64}$/

/**
 * A model failure as a low-cardinality code (the `model.call` event's `code`, OpenTelemetry's
 * `error.type`): a ToolError's code, a LoopError's kind, the HTTP status, a Node error code, the
 * error's class name, else `_OTHER`. Never its message: that can hold a secret and is unbounded.
 *
 * @example
 * modelFailureCode(Object.assign(new Error('Service Unavailable'), { status: 503 })) // '503'
 */
export function modelFailureCode(err: unknown): string {
  if (ToolError.is(err)) return err.code
  if (LoopError.is(err)) return err.kind
  if (typeof err !== 'object' || err === null) return '_OTHER'
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599) return String(status)
  if (typeof e.code === 'string' && CODE.test(e.code)) return e.code
  if (e.name === 'TimeoutError') return 'timeout'
  if (typeof e.name === 'string' && CODE.test(e.name) && e.name !== 'Error') return e.name
  return '_OTHER'
}

const WHAT: Record<string, string> = {
  rate_limited: 'rate limited by the provider',
  overloaded: 'the provider is overloaded',
  upstream_error: 'the provider failed',
  network_error: 'the connection to the provider failed',
}
