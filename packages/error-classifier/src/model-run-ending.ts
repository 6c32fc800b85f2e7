import { LoopError } from '@shallot/core'

/**
 * What a model provider's failure says about itself, as each reader gathers it: `errorClassifier()`'s model side from any
 * throwable, `@shallot/ai-sdk`'s `classifyModelError` from the AI SDK's shapes (stream error events included).
 */
export interface ModelFailureFacts {
  /** The HTTP status, when there was one. */
  readonly status: number | undefined
  /** The provider's error `type` and `code` (`insufficient_quota`, `context_length_exceeded`, `authentication_error`). */
  readonly labels: readonly (string | undefined)[]
  /** The provider's message (and the messages along the cause chain): where the window or the quota is named in words. */
  readonly text: string
  /** The reader already knows the quota is used up (a classifier rule said `quota_exceeded`). */
  readonly quota?: boolean
  /** Node, undici and TLS error codes along the cause chain (`CERT_HAS_EXPIRED`), when the reader gathered them. */
  readonly codes?: readonly (string | undefined)[]
}

/**
 * TLS failures no wait mends: a certificate that fails verification (expired, not yet valid, revoked, self-signed,
 * from an unknown issuer, for another host), or TLS spoken to a port that does not speak it. Nothing was sent, and
 * a person has to fix the certificate, the trust store (`NODE_EXTRA_CA_CERTS`) or the URL. A TLS handshake that
 * timed out is not here: that one heals.
 *
 * @example
 * CERTIFICATE_CODES.includes('CERT_HAS_EXPIRED') // true
 */
export const CERTIFICATE_CODES: readonly string[] = Object.freeze([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_REJECTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
])

/** Why a model failure ends the run whatever is retried: the request does not fit, or a person must fix the account. */
export type ModelRunEnding =
  | { readonly kind: 'context_exceeded'; readonly reason: 'context' }
  | { readonly kind: 'user_input_required'; readonly reason: 'quota' | 'credentials' | 'certificate' }

// What a provider says when the request does not fit the model's window (OpenAI, Anthropic, Gemini, vLLM words).
const CONTEXT_CODES = new Set(['context_length_exceeded', 'request_too_large', 'string_above_max_length'])
const CONTEXT_TEXT =
  /prompt is too long|context[ _]length|maximum context|context window|exceeds the maximum number of tokens|input token count .* exceeds|too many tokens/i
// OpenAI sends a used-up quota as a 429 `insufficient_quota`; Anthropic as a 400 "credit balance is too low".
const QUOTA_CODES = new Set(['insufficient_quota', 'billing_hard_limit_reached', 'billing_not_active'])
const QUOTA_TEXT = /credit balance is too low|exceeded your current quota|insufficient[_ ]quota|billing (hard limit|is not active)/i
const CREDENTIAL_TYPES = new Set(['authentication_error', 'permission_error', 'invalid_api_key', 'permission_denied'])

const says = (set: ReadonlySet<string>, labels: readonly (string | undefined)[]) => labels.some((l) => l !== undefined && set.has(l))

const CONTEXT: ModelRunEnding = { kind: 'context_exceeded', reason: 'context' }
const QUOTA: ModelRunEnding = { kind: 'user_input_required', reason: 'quota' }
const CREDENTIALS: ModelRunEnding = { kind: 'user_input_required', reason: 'credentials' }
const CERTIFICATE: ModelRunEnding = { kind: 'user_input_required', reason: 'certificate' }
const CERTIFICATES: ReadonlySet<string> = new Set(CERTIFICATE_CODES)

/**
 * The one table of model failures that end the run: a request that does not fit the window (a
 * 429 that mentions tokens is a rate limit on tokens per minute, not a request too long), a used-up quota or
 * billing (402, `insufficient_quota` even as a 429, "credit balance is too low"), refused credentials (401, 403,
 * `authentication_error`, `permission_error`), a TLS certificate that fails verification ({@link CERTIFICATE_CODES},
 * among the labels or the codes). No retry and no other model helps these. `undefined` for the rest.
 *
 * @example
 * modelRunEnding({ status: 429, labels: ['insufficient_quota'], text: 'You exceeded your current quota' })
 * // { kind: 'user_input_required', reason: 'quota' }
 */
export function modelRunEnding(facts: ModelFailureFacts): ModelRunEnding | undefined {
  const text = facts.text.slice(0, 4096)
  if (says(CONTEXT_CODES, facts.labels) || (facts.status !== 429 && CONTEXT_TEXT.test(text))) return CONTEXT
  if (facts.status === 402 || facts.quota === true || says(QUOTA_CODES, facts.labels) || QUOTA_TEXT.test(text)) return QUOTA
  if (facts.status === 401 || facts.status === 403 || says(CREDENTIAL_TYPES, facts.labels)) return CREDENTIALS
  if (facts.status === undefined && (says(CERTIFICATES, facts.labels) || says(CERTIFICATES, facts.codes ?? []))) return CERTIFICATE
  return undefined
}

const ENDING_TEXT = {
  context: "the request does not fit the model's context window",
  quota: "the model provider's quota or billing is exhausted",
  credentials: 'the model provider refused the credentials',
  certificate: "the model provider's TLS certificate could not be verified",
} as const

/**
 * The `LoopError` a {@link ModelRunEnding} ends the run with, in the one wording: what happened, the status and
 * the provider's code or type in brackets, the provider's message (already sanitized by the caller) after a
 * colon; `details` as given, plus `reason` (`quota`, `credentials`, `certificate`) for `user_input_required`.
 *
 * @example
 * modelRunEndingError({ kind: 'user_input_required', reason: 'credentials' }, { status: 401, label: 'invalid_api_key', quote: 'Incorrect API key provided', details: {}, cause: err })
 * // LoopError('user_input_required', 'the model provider refused the credentials (401 invalid_api_key): Incorrect API key provided')
 */
export function modelRunEndingError(
  ending: ModelRunEnding,
  said: {
    readonly status: number | undefined
    readonly label: string | undefined
    readonly quote: string
    readonly details: Record<string, unknown>
    readonly cause: unknown
  },
): LoopError {
  const label = [said.status, said.label].filter((p) => p !== undefined && p !== '').join(' ')
  const message = `${ENDING_TEXT[ending.reason]}${label === '' ? '' : ` (${label})`}${said.quote === '' ? '' : `: ${said.quote}`}`
  return new LoopError(ending.kind, message, {
    cause: said.cause,
    details: ending.kind === 'context_exceeded' ? said.details : { ...said.details, reason: ending.reason },
  })
}
