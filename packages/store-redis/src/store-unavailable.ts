import { ToolError } from '@shallot/core'

/**
 * The error every Redis store method rejects with when Redis did not answer in time or failed the
 * command: soft, transient and safe to repeat. The Redis error (which may name hosts) is only the
 * `cause`, for logs. The layers above decide what it means: idempotency refuses the call
 * (`store_unavailable`), the breaker decides on local state, retry does not retry.
 *
 * @example
 * throw redisUnavailable('idempotency.begin', 'no answer within 200 ms')
 */
export function redisUnavailable(op: string, why: string, cause?: unknown): ToolError {
  return new ToolError('store_unavailable', `The Redis store failed ${op}: ${why}.`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    hint: 'try again in a moment',
    cause,
    details: { op },
  })
}
