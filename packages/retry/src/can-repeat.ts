import type { ToolEffect, ToolError } from '@shallot/core'

/**
 * Which failures may be repeated at all: only `retryable` ones, and for a `write` tool (or an unknown one)
 * only those that prove nothing reached the world (`safeToRepeat`: 429, connection refused, circuit open).
 *
 * @example
 * canRepeat(new ToolError('timeout', 'took too long'), 'write') // false: the charge may have gone through
 */
export function canRepeat(error: ToolError, effect: ToolEffect | undefined): boolean {
  if (!error.retryable) return false
  return effect === 'read' || effect === 'idempotent' || error.safeToRepeat
}
