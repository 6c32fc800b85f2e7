import { isConnectionFailure, LoopError, sanitize, ToolError } from '@shallot/core'
import type { SanitizeOptions } from '@shallot/core/kit'
import { modelRunEnding, modelRunEndingError, retryAfterFromHeaders } from '@shallot/error-classifier'
import { type ModelErrorFacts, modelErrorFacts } from './model-error-facts.js'

/**
 * Longest server pushback a model error carries by default: a day, so the pushback reaches the layers as the provider
 * said it and retry's own `maxRetryAfterMs` decides (a 120 s `Retry-After` read as 60 s would be re-sent early, and a
 * run that should park on it would wait instead).
 */
const DEFAULT_MAX_RETRY_AFTER_MS = 24 * 3600 * 1000

export interface ClassifyModelErrorOptions {
  /** Wall-clock epoch ms, for a `Retry-After` given as an HTTP date. Default `Date.now`. */
  wallNow?: () => number
  /** Longest `retryAfterMs` handed on; a longer pushback is clamped to it. Default a day (86 400 000). */
  maxRetryAfterMs?: number
  /** Your own secrets, redacted from the provider's message before it is quoted. */
  secrets?: SanitizeOptions['secrets']
}

/** Longest provider message quoted in an error. */
const MAX_QUOTE = 500

const RATE_TYPES = new Set(['rate_limit_error', 'rate_limit_exceeded', 'rate_limited', 'tokens', 'requests'])
const OVERLOADED_TYPES = new Set(['overloaded_error', 'overloaded', 'service_unavailable', 'server_is_overloaded'])
const SERVER_TYPES = new Set(['server_error', 'api_error', 'internal_error', 'internal_server_error', 'timeout', 'upstream_error'])
/** Responses the SDK could not read: a body cut short or a proxy's page; worth another try, within the ceiling. */
const UNREADABLE = new Set(['AI_JSONParseError', 'AI_EmptyResponseBodyError', 'AI_InvalidResponseDataError'])

const has = (set: ReadonlySet<string>, ...values: Array<string | undefined>) => values.some((v) => v !== undefined && set.has(v))

function label(facts: ModelErrorFacts): string {
  const parts = [facts.status === undefined ? undefined : String(facts.status), facts.code ?? facts.type].filter(Boolean)
  return parts.length === 0 ? '' : ` (${parts.join(' ')})`
}

type TransientCode = 'rate_limited' | 'overloaded' | 'upstream_error' | 'network_error' | 'timeout'

/** The transient code a failure earns, or undefined when it is not transient. */
function transientCode(f: ModelErrorFacts): TransientCode | undefined {
  if (f.status === 429 || has(RATE_TYPES, f.type, f.code)) return 'rate_limited'
  if (f.status === 529 || f.status === 503 || has(OVERLOADED_TYPES, f.type, f.code)) return 'overloaded'
  if (f.status === 408 || f.chain.includes('TimeoutError')) return 'timeout'
  // Status 200 is a response whose body failed after the headers: the connection, not the request.
  if (f.status === 200 || f.chain.some(isConnectionFailure)) return 'network_error'
  if (f.status === 425 || (f.status !== undefined && f.status >= 500) || has(SERVER_TYPES, f.type, f.code)) return 'upstream_error'
  if (f.status === undefined && f.sdkRetryable === true) return 'network_error'
  if (f.chain.some((c) => UNREADABLE.has(c))) return 'upstream_error'
  // An error event inside a stream arrives as a plain object, typed by the provider or not at all (a refusal of
  // the credentials never gets here: the run-ending table answered it first).
  if (f.plainObject && f.status === undefined && f.type !== 'invalid_request_error') return 'upstream_error'
  return undefined
}

/** Whether it already is a shallot error; a proxy whose traps throw is not. */
function isShallotError(error: unknown): error is ToolError | LoopError {
  try {
    return LoopError.is(error) || ToolError.is(error)
  } catch {
    return false
  }
}

const WHAT: Record<TransientCode, string> = {
  rate_limited: 'the model provider is rate limiting',
  overloaded: 'the model provider is overloaded',
  upstream_error: 'the model provider failed',
  network_error: 'the connection to the model provider failed',
  timeout: 'the model provider did not answer in time',
}

/**
 * Puts a failed model call in shallot's vocabulary: a transient `ToolError` (retry it, no sooner
 * than `retryAfterMs`) or the `LoopError` that ends the run. Reads `APICallError`s, the plain
 * objects error events inside a stream arrive as, and Node/undici connection errors.
 *
 * - 429, 5xx, 529/overloaded, 408, resets (`UND_ERR_SOCKET`, `ECONNRESET`, a body that failed after
 *   status 200), stream error events: `ToolError` `rate_limited` / `overloaded` / `upstream_error` /
 *   `network_error` / `timeout`, with `retryAfterMs` from `retry-after-ms` or `Retry-After`.
 * - a context-length refusal: `LoopError('context_exceeded')`.
 * - 401/403, quota or billing exhaustion (`insufficient_quota`, even as a 429): `LoopError('user_input_required')`.
 * - any other refusal (400 invalid request, 404 unknown model) or failure: `LoopError('model_failed')`.
 *
 * Every message quotes the provider's message, sanitized (secrets, hosts, invisible characters).
 *
 * @example
 * try {
 *   await generateText({ model, prompt, maxRetries: 0 })
 * } catch (err) {
 *   const failure = classifyModelError(err)
 *   if (ToolError.is(failure) && failure.retryable) await sleep(failure.retryAfterMs ?? 1000)
 *   else throw failure
 * }
 */
export function classifyModelError(error: unknown, options: ClassifyModelErrorOptions = {}): ToolError | LoopError {
  if (isShallotError(error)) return error
  const facts = modelErrorFacts(error)
  const quote = sanitize(facts.message, { maxLength: MAX_QUOTE, ...(options.secrets === undefined ? {} : { secrets: options.secrets }) })
  const said = quote === '' ? '' : `: ${quote}`
  const details: Record<string, unknown> = { status: facts.status, type: facts.type, code: facts.code, providerMessage: quote }
  for (const key of Object.keys(details)) if (details[key] === undefined) delete details[key]

  // The failures that end the run: @shallot/error-classifier's one table, shared with errorClassifier()'s model side.
  const ending = modelRunEnding({ status: facts.status, labels: [facts.code, facts.type], text: facts.message, codes: facts.chain })
  if (ending !== undefined) {
    return modelRunEndingError(ending, { status: facts.status, label: facts.code ?? facts.type, quote, details, cause: error })
  }
  if (facts.chain.includes('AbortError')) {
    return new ToolError('cancelled', 'the model call was aborted', { category: 'fatal', retryable: false, cause: error, details })
  }
  const code = transientCode(facts)
  if (code !== undefined) {
    const retryAfterMs = retryAfterFromHeaders(facts.headers, {
      now: (options.wallNow ?? Date.now)(),
      maxMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    })
    // Refused at the door (429, 503/529, no connection): nothing reached the model.
    const safeToRepeat = code === 'rate_limited' || code === 'overloaded' || (code === 'network_error' && facts.status === undefined)
    return new ToolError(code, `${WHAT[code]}${label(facts)}${said}`, {
      category: 'transient',
      retryable: true,
      safeToRepeat,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      cause: error,
      details,
    })
  }
  if (facts.status !== undefined && facts.status >= 400) {
    return new LoopError('model_failed', `the model provider refused the request${label(facts)}${said}`, { cause: error, details })
  }
  return new LoopError('model_failed', `the model call failed${label(facts)}${said}`, { cause: error, details })
}
