/**
 * What a failed outbound request says about its effect: `not_processed` (the service refused it, or
 * it never left this process, so even a write may be repeated: `safeToRepeat`) or `unknown` (it may
 * have taken effect). Decision 405 gives the sources.
 */
export type RequestFate = 'not_processed' | 'unknown'

/** What {@link requestFate} decides on: read from a thrown error and its causes. */
export interface RequestFailure {
  /** The HTTP status of the response, if one came back. */
  readonly status?: number | undefined
  /** The response carried a usable `Retry-After` (or `retry-after-ms`). */
  readonly retryAfter?: boolean | undefined
  /** String `code`s of the error and its causes (Node errno, undici, Bun, TLS). */
  readonly codes?: readonly string[] | undefined
}

/** One row of {@link REQUEST_FATES}: a status (with or without `Retry-After`) or an error code, its fate and why. */
export interface RequestFateRow {
  readonly status?: number
  readonly retryAfter?: boolean
  readonly code?: string
  readonly fate: RequestFate
  readonly why: string
}

const HTTP_NOT_PROCESSED: readonly [number, string][] = [
  [400, 'RFC 9110 §15.5.1: the server cannot or will not process the request'],
  [401, 'RFC 9110 §15.5.2: the request has not been applied (no valid credentials)'],
  [403, 'RFC 9110 §15.5.4: the server refuses to fulfill the request'],
  [404, 'RFC 9110 §15.5.5: no current representation of the target; nothing was done to it'],
  [405, 'RFC 9110 §15.5.6: the method is not supported by the target'],
  [408, 'RFC 9110 §15.5.9: the server did not receive a complete request; the client may repeat it'],
  [409, 'RFC 9110 §15.5.10: the request could not be completed (conflict with the current state)'],
  [410, 'RFC 9110 §15.5.11: the target is gone; nothing was done to it'],
  [413, 'RFC 9110 §15.5.14: the server refuses to process a request that large'],
  [415, 'RFC 9110 §15.5.16: the server refuses the content format'],
  [422, 'RFC 9110 §15.5.21: the server was unable to process the contained instructions'],
  [429, 'RFC 6585 §4: rate limited; Stripe and the AWS SDKs retry it with backoff'],
  [529, "Anthropic's overloaded: the request is refused before any work"],
]
const HTTP_UNKNOWN: readonly [number, string][] = [
  [500, 'RFC 9110 §15.6.1: an unexpected condition, at any point of the work; Stripe: treat the result as indeterminate'],
  [502, 'RFC 9110 §15.6.3: a gateway got an invalid answer from upstream, which may have done the work'],
  [504, 'RFC 9110 §15.6.5: a gateway stopped waiting for upstream, which may still do the work'],
]
// Before a byte of the request was sent: DNS, connect, TLS handshake.
const NOT_SENT = [
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ConnectionRefused',
  'FailedToOpenSocket',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_TLS_HANDSHAKE_TIMEOUT',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]
// After the request may have been sent: the server may have read it and done the work.
const MAYBE_SENT = [
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ConnectionClosed',
]

/**
 * The one table of what each failure means for a write: every HTTP status and error code shallot
 * knows, its fate and its source. Anything not in it is `unknown`. The error classifier, the MCP and
 * AI SDK adapters read it through {@link requestFate}; docs/decisions/405 explains each row.
 *
 * @example
 * REQUEST_FATES.find((row) => row.status === 503 && row.retryAfter)?.fate // 'not_processed'
 */
export const REQUEST_FATES: readonly RequestFateRow[] = Object.freeze(
  (
    [
      ...HTTP_NOT_PROCESSED.map(([status, why]): RequestFateRow => ({ status, fate: 'not_processed', why })),
      {
        status: 503,
        retryAfter: true,
        fate: 'not_processed',
        why: 'RFC 9110 §15.6.4: temporarily unable to handle the request; the Retry-After says when it will be',
      },
      {
        status: 503,
        retryAfter: false,
        fate: 'unknown',
        why: 'RFC 2616 §10.5.4: without Retry-After, the client handles a 503 as it would a 500',
      },
      ...HTTP_UNKNOWN.map(([status, why]): RequestFateRow => ({ status, fate: 'unknown', why })),
      ...NOT_SENT.map(
        (code): RequestFateRow => ({ code, fate: 'not_processed', why: 'failed before the request was sent (DNS, connect, TLS)' }),
      ),
      ...MAYBE_SENT.map(
        (code): RequestFateRow => ({ code, fate: 'unknown', why: 'the connection failed after the request may have been sent' }),
      ),
    ] satisfies RequestFateRow[]
  ).map((row: RequestFateRow) => Object.freeze(row)),
)

const byStatus = new Map<number, RequestFate>(
  REQUEST_FATES.filter((row) => row.retryAfter === undefined && row.status !== undefined).map((row) => [row.status as number, row.fate]),
)
const byCode = new Map<string, RequestFate>(
  REQUEST_FATES.filter((row) => row.code !== undefined).map((row) => [row.code as string, row.fate]),
)
const statusWithRetryAfter = new Map<number, RequestFate>(
  REQUEST_FATES.filter((row) => row.retryAfter === true).map((row) => [row.status as number, row.fate]),
)
const statusWithoutRetryAfter = new Map<number, RequestFate>(
  REQUEST_FATES.filter((row) => row.retryAfter === false).map((row) => [row.status as number, row.fate]),
)

/**
 * Whether an error code (Node errno, undici, Bun, TLS) is a connection failure in {@link REQUEST_FATES}:
 * the one list of such codes, read by core's model retry test, the error classifier and the adapters.
 *
 * @example
 * isConnectionFailure('ECONNRESET') // true
 * isConnectionFailure('ENOENT')     // false
 */
export function isConnectionFailure(code: string): boolean {
  return byCode.has(code)
}

/**
 * The fate of a failed request, from {@link REQUEST_FATES}. A status decides when there is one;
 * otherwise any code that says the request may have been sent makes it `unknown`, and a code that
 * says it never left makes it `not_processed`. Anything else is `unknown`: the safe side.
 *
 * @example
 * requestFate({ status: 503, retryAfter: true }) // 'not_processed'
 * requestFate({ status: 503 })                   // 'unknown'
 * requestFate({ codes: ['ECONNREFUSED'] })       // 'not_processed'
 */
export function requestFate(failure: RequestFailure): RequestFate {
  const { status, codes } = failure
  if (status !== undefined) {
    const split = (failure.retryAfter === true ? statusWithRetryAfter : statusWithoutRetryAfter).get(status)
    return split ?? byStatus.get(status) ?? 'unknown'
  }
  if (codes === undefined || codes.length === 0) return 'unknown'
  let sent = false
  let notSent = false
  for (const code of codes) {
    const fate = byCode.get(code)
    if (fate === 'unknown') sent = true
    else if (fate === 'not_processed') notSent = true
  }
  return notSent && !sent ? 'not_processed' : 'unknown'
}

/**
 * The instruction for a write whose outcome is unknown: never "try again" (the identical call is
 * refused by idempotency), but the next step that can work.
 *
 * @example
 * new ToolError('upstream_error', 'HTTP 502', { hint: MAY_HAVE_TAKEN_EFFECT })
 */
export const MAY_HAVE_TAKEN_EFFECT =
  'it may have taken effect, so do not repeat this call: find out whether it did with a tool that looks it up (e.g. find the order) and continue from what you find; if you have no such tool, ask the user'
