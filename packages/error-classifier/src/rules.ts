// biome-ignore-all lint/suspicious/noThenProperty: rules are { match, then } (docs/errors.md); `then` is data, never callable, so no rule is a thenable
import { REQUEST_FATES, type RequestFate } from '@shallot/core'
import { z } from 'zod'
import { CERTIFICATE_CODES } from './model-run-ending.js'

const httpStatus = z.number().int().min(100).max(599)
const oneOrMore = z.union([z.string().min(1).max(200), z.array(z.string().min(1).max(200)).min(1).max(100)])

/**
 * What a rule looks for. Every field given must match; a list matches any of its entries.
 *
 * @example
 * classifierMatchSchema.parse({ status: '5xx', messageIncludes: ['overloaded'] })
 */
export const classifierMatchSchema = z
  .object({
    /** An HTTP status, a list of them, or a family: `'4xx'`, `'5xx'`. */
    status: z.union([httpStatus, z.array(httpStatus).min(1).max(100), z.enum(['1xx', '2xx', '3xx', '4xx', '5xx'])]).optional(),
    /** A string `code` on the error or any of its causes (`ECONNREFUSED`). */
    code: oneOrMore.optional(),
    /** The thrown value's `name` or constructor name (`AbortError`, `ZodError`). */
    name: oneOrMore.optional(),
    /** A model provider's error `type` (Anthropic `overloaded_error`, OpenAI `insufficient_quota`), from the OpenAI, Anthropic and AI SDK errors. */
    type: oneOrMore.optional(),
    /** Case-insensitive text in the error's or its causes' messages. */
    messageIncludes: oneOrMore.optional(),
  })
  .strict()

/**
 * What a matching rule produces. `retryable` defaults to `category === 'transient'`; `safeToRepeat`, when left
 * out, comes from the failure itself (its status, `Retry-After` and error codes) by core's `requestFate`.
 *
 * @example
 * classifierOutcomeSchema.parse({ code: 'quota_exceeded', category: 'user', hint: 'ask an admin to raise the quota' })
 */
export const classifierOutcomeSchema = z
  .object({
    code: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be snake_case, like "rate_limited"'),
    category: z.enum(['transient', 'recoverable', 'user', 'fatal']),
    retryable: z.boolean().optional(),
    safeToRepeat: z.boolean().optional(),
    hint: z.string().min(1).max(500).optional(),
  })
  .strict()

/**
 * One classification rule, as data (the config file holds these). User rules run before the
 * built-in ones; the first rule that matches wins.
 *
 * @example
 * classifierRuleSchema.parse({ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable', hint: 'ids look like ORD-2026-NNNNN' } })
 */
export const classifierRuleSchema = z
  .object({
    /** Names the rule in events and `details.rule`. */
    id: z.string().min(1).max(100).optional(),
    match: classifierMatchSchema,
    then: classifierOutcomeSchema,
  })
  .strict()

/**
 * A list of rules, as the config package reads them.
 *
 * @example
 * const rules = classifierRulesSchema.parse(yaml.errorClassifier.rules)
 */
export const classifierRulesSchema = z.array(classifierRuleSchema).max(1000)

/** A rule as you write it. */
export type ClassifierRule = z.input<typeof classifierRuleSchema>

// Node errno, undici, Bun and TLS codes, from the one table of what each failure means for a write:
// those before the request was sent (DNS, connect, TLS) and those after it may have been.
const codesWhose = (fate: RequestFate) => REQUEST_FATES.flatMap((row) => (row.code !== undefined && row.fate === fate ? [row.code] : []))
const NEVER_CONNECTED = codesWhose('not_processed')
const MAYBE_REACHED = codesWhose('unknown')
// What fetch throws when the request never completed, by runtime: Chrome and edge runtimes, Firefox,
// Safari, Safari when the connection dropped, Deno. All TypeErrors, so they must be told apart from a bug.
const FETCH_FAILED = [
  'fetch failed',
  'failed to fetch',
  'networkerror when attempting to fetch resource',
  'load failed',
  'the network connection was lost',
  'error sending request for url',
]
const UNREACHABLE_HINT = 'the service could not be reached; try again shortly'
const CERTIFICATE_HINT =
  "the service's TLS certificate could not be verified (expired, self-signed, or for another host); waiting will not help: a person has to fix the certificate, the trust store or the URL"
// OpenAI sends `insufficient_quota` as a 429 that its SDK retries; Anthropic an `invalid_request_error` 400.
const QUOTA_CODES = ['insufficient_quota', 'billing_hard_limit_reached', 'billing_not_active']
const QUOTA_HINT = "the account's quota or credit is used up; waiting will not help, a person has to raise it"
const OVERLOADED = {
  code: 'overloaded',
  category: 'transient',
  hint: 'the service is overloaded and did not take the request; try again shortly',
} as const

function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) frozen(item)
    Object.freeze(value)
  }
  return value
}

/**
 * The built-in rules, in the order they are tried (after any user rules). Exported so the config
 * package, docs and tests read the same table; frozen all the way down, because every classifier
 * in the process shares the one compiled copy.
 *
 * @example
 * builtinRules.find((rule) => rule.id === 'http_429')?.then.code // 'rate_limited'
 */
export const builtinRules: readonly ClassifierRule[] = frozen([
  {
    id: 'abort',
    match: { name: ['AbortError', 'APIUserAbortError'] },
    then: { code: 'cancelled', category: 'recoverable', retryable: false },
  },
  {
    id: 'timeout',
    match: { name: ['TimeoutError', 'APIConnectionTimeoutError'] },
    then: { code: 'timeout', category: 'transient', hint: 'try again, or ask for less at once' },
  },
  {
    id: 'zod',
    match: { name: 'ZodError' },
    then: { code: 'invalid_arguments', category: 'recoverable', retryable: false, hint: 'fix the listed fields and call again' },
  },
  // Before http_429 and http_400: a quota refusal looks like a rate limit or a bad request, but no wait or fix helps.
  { id: 'quota_code', match: { code: QUOTA_CODES }, then: { code: 'quota_exceeded', category: 'user', hint: QUOTA_HINT } },
  { id: 'quota_type', match: { type: QUOTA_CODES }, then: { code: 'quota_exceeded', category: 'user', hint: QUOTA_HINT } },
  {
    id: 'quota_credit',
    match: { status: 400, messageIncludes: 'credit balance is too low' },
    then: { code: 'quota_exceeded', category: 'user', hint: QUOTA_HINT },
  },
  {
    id: 'http_429',
    match: { status: 429 },
    then: { code: 'rate_limited', category: 'transient', hint: 'wait before calling this tool again' },
  },
  {
    id: 'http_400',
    match: { status: [400, 422] },
    then: { code: 'invalid_arguments', category: 'recoverable', hint: 'the service rejected the request; fix the arguments' },
  },
  {
    id: 'http_401',
    match: { status: 401 },
    then: { code: 'auth_required', category: 'user', hint: "the tool's credentials were refused; a person has to fix them" },
  },
  {
    id: 'http_403',
    match: { status: 403 },
    then: { code: 'permission_denied', category: 'fatal', hint: 'this account may not do that; do not retry' },
  },
  {
    id: 'http_404',
    match: { status: [404, 410] },
    then: { code: 'not_found', category: 'recoverable', hint: 'check the identifier or path' },
  },
  { id: 'http_408', match: { status: 408 }, then: { code: 'timeout', category: 'transient' } },
  {
    id: 'http_409',
    match: { status: 409 },
    then: { code: 'conflict', category: 'recoverable', hint: 'the resource changed; read it again before writing' },
  },
  // Anthropic's 529 refuses the request before any work, so even a write may be repeated.
  { id: 'http_529', match: { status: 529 }, then: OVERLOADED },
  { id: 'http_5xx', match: { status: [500, 502, 503, 504] }, then: { code: 'upstream_error', category: 'transient' } },
  { id: 'http_4xx', match: { status: '4xx' }, then: { code: 'http_error', category: 'recoverable' } },
  { id: 'http_5xx_other', match: { status: '5xx' }, then: { code: 'upstream_error', category: 'transient' } },
  // Before never_connected: no byte was sent either, but no wait mends a certificate; a person has to.
  {
    id: 'tls_certificate',
    match: { code: [...CERTIFICATE_CODES] },
    then: { code: 'certificate_error', category: 'user', hint: CERTIFICATE_HINT },
  },
  {
    id: 'never_connected',
    match: { code: NEVER_CONNECTED },
    then: { code: 'network_error', category: 'transient', hint: UNREACHABLE_HINT },
  },
  { id: 'connection_lost', match: { code: MAYBE_REACHED }, then: { code: 'network_error', category: 'transient', hint: UNREACHABLE_HINT } },
  { id: 'enoent', match: { code: 'ENOENT' }, then: { code: 'not_found', category: 'recoverable', hint: 'check the path' } },
  {
    id: 'not_a_file',
    match: { code: ['EISDIR', 'ENOTDIR'] },
    then: { code: 'invalid_arguments', category: 'recoverable', hint: 'check whether the path is a file or a directory' },
  },
  {
    id: 'fetch_failed',
    match: { name: 'TypeError', messageIncludes: FETCH_FAILED },
    then: { code: 'network_error', category: 'transient', hint: UNREACHABLE_HINT },
  },
  {
    // undici ends a response body cut off mid-stream with TypeError('terminated'): the request reached the server.
    id: 'fetch_terminated',
    match: { name: 'TypeError', messageIncludes: 'terminated' },
    then: { code: 'network_error', category: 'transient', hint: UNREACHABLE_HINT },
  },
  // A stream's error event after some output (the SDK throws it without a status): the request was being served.
  {
    id: 'provider_overloaded',
    match: { type: 'overloaded_error' },
    then: { code: 'overloaded', category: 'transient', hint: 'the service is overloaded; try again shortly' },
  },
  { id: 'provider_server_error', match: { type: ['server_error', 'api_error'] }, then: { code: 'upstream_error', category: 'transient' } },
  {
    id: 'sdk_connection',
    match: { name: 'APIConnectionError' },
    then: { code: 'network_error', category: 'transient', hint: UNREACHABLE_HINT },
  },
  {
    id: 'tool_bug',
    match: { name: ['TypeError', 'ReferenceError', 'RangeError'] },
    then: {
      code: 'tool_panic',
      category: 'recoverable',
      retryable: false,
      hint: 'this is a bug in the tool, not in your call; try another way',
    },
  },
] satisfies ClassifierRule[])
