import { ToolError } from '@shallot/core'

/** PostgreSQL's code for a table that does not exist (`undefined_table`). */
const UNDEFINED_TABLE = '42P01'

const codeOf = (err: unknown) => (typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined)

/**
 * The error every PostgreSQL store method rejects with when the server did not answer in time or
 * failed the query: soft, transient and safe to repeat. The driver's error (which may name hosts,
 * users and databases) is only the `cause`, for logs. A missing table says how to create it.
 *
 * @example
 * throw postgresUnavailable('idempotency.begin', 'no answer within 1000 ms')
 */
export function postgresUnavailable(op: string, why: string, cause?: unknown): ToolError {
  const missing = codeOf(cause) === UNDEFINED_TABLE
  return new ToolError('store_unavailable', `The PostgreSQL store failed ${op}: ${missing ? 'its tables do not exist' : why}.`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    hint: missing ? 'create the tables once with `await stores.migrate()` before the first call' : 'try again in a moment',
    cause,
    details: { op },
  })
}
