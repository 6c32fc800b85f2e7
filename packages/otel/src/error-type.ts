import { LoopError, ToolError } from '@shallot/core'

/**
 * `error.type` of a failure: a shallot code or kind, an HTTP status, a Node error code, or the
 * error's class name. Never its message: that may hold a secret and has unbounded cardinality.
 */
export function errorTypeOf(err: unknown): string {
  if (ToolError.is(err)) return err.code
  if (LoopError.is(err)) return err.kind
  if (typeof err !== 'object' || err === null) return '_OTHER'
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined && Number.isInteger(status)) return String(status)
  if (typeof e.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.code)) return e.code
  if (typeof e.name === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.name) && e.name !== 'Error') return e.name
  return '_OTHER'
}
