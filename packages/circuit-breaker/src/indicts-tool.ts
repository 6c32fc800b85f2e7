import { ToolError } from '@shallot/core'

// Failures that say the tool (or what stands behind it) is sick, whatever category a classifier gave them.
const SICK = new Set(['timeout', 'upstream_error', 'network_error', 'rate_limited', 'tool_panic'])

// Failures that say nothing about the tool's health: the model's mistakes, a human's business, another
// layer's refusal (counting a nested breaker's `circuit_open` would keep a circuit open on its own echo;
// a bulkhead's `overloaded` is this process's own queue being full, not the tool failing).
const NOT_THE_TOOL = new Set([
  'invalid_arguments',
  'not_found',
  'unknown_tool',
  'permission_denied',
  'auth_required',
  'conflict',
  'circuit_open',
  'overloaded',
  'repeated_failure',
  'cancelled',
  'idempotency_mismatch',
  'store_unavailable',
])

/**
 * The default answer to "does this error count against the tool's circuit?". Counts failures that
 * indict the tool: `timeout`, `upstream_error`, `network_error`, `rate_limited` (the server is
 * pushing back: stop asking for a while), `tool_panic`, any other `transient` ToolError, and anything
 * thrown that is not a ToolError at all (the tool crashed). Never counts the model's mistakes
 * (`invalid_arguments`, `not_found`, `unknown_tool`, ...), other layers' refusals (`circuit_open`,
 * a bulkhead's `overloaded`, ...), or cancellation.
 * Hard errors (`LoopError`) and caller cancellation are never offered to it.
 *
 * @example
 * circuitBreaker({ isFailure: (error, ctx) => indictsTool(error) || isQuotaError(error) })
 */
export function indictsTool(error: unknown): boolean {
  if (!ToolError.is(error)) return true
  if (SICK.has(error.code)) return true
  if (NOT_THE_TOOL.has(error.code)) return false
  return error.category === 'transient'
}
