import { LoopError, type ModelMiddleware, sanitize, ToolError } from '@shallot/core'
import type { Classifier } from './create-classifier.js'
import { type ErrorFacts, errorFacts } from './error-facts.js'

// What a provider says when the request does not fit the model's window (OpenAI, Anthropic, Gemini, vLLM words).
const CONTEXT_CODES = new Set(['context_length_exceeded', 'request_too_large', 'string_above_max_length'])
const CONTEXT_TEXT =
  /prompt is too long|context[ _]length|maximum context|context window|exceeds the maximum number of tokens|input token count .* exceeds|too many tokens/i
const CREDENTIAL_TYPES = new Set(['authentication_error', 'permission_error', 'invalid_api_key', 'permission_denied'])
/** Longest provider message quoted in a model failure (the report reads it, not the model). */
const MAX_QUOTE = 500

function factsOf(error: unknown): ErrorFacts | undefined {
  try {
    return errorFacts(error)
  } catch {
    return undefined
  }
}

const saysAny = (set: ReadonlySet<string>, facts: ErrorFacts) => facts.codes.some((c) => set.has(c)) || facts.types.some((t) => set.has(t))

/** The text that may name the context window: the provider's own message and the messages along the chain, bounded. */
function textOf(facts: ErrorFacts): string {
  return [facts.provider?.message ?? '', ...facts.messages].join('\n').slice(0, 4096)
}

type Ending = { readonly kind: 'context_exceeded' | 'user_input_required'; readonly reason: keyof typeof ENDING_TEXT }

/** Why a failure ends the run whatever is retried: the request does not fit, or a person must fix the account. */
function runEnding(facts: ErrorFacts, classified: ToolError | undefined): Ending | undefined {
  // A 429 that mentions tokens is a rate limit on tokens per minute, not a request too long.
  if (saysAny(CONTEXT_CODES, facts) || (facts.status !== 429 && CONTEXT_TEXT.test(textOf(facts))))
    return { kind: 'context_exceeded', reason: 'context' }
  if (facts.status === 402 || classified?.code === 'quota_exceeded') return { kind: 'user_input_required', reason: 'quota' }
  if (facts.status === 401 || facts.status === 403 || saysAny(CREDENTIAL_TYPES, facts))
    return { kind: 'user_input_required', reason: 'credentials' }
  return undefined
}

const ENDING_TEXT = {
  context: "the request does not fit the model's context window",
  quota: "the model provider's quota or billing is exhausted",
  credentials: 'the model provider refused the credentials',
} as const

/**
 * What a model call's failure means, in the words core and the model layers (retry, circuit
 * breaker, fallback) read: the same error for the same failure wherever it is classified.
 *
 * - the shallot errors, as they are: a `LoopError`, a `ToolError` (an adapter or a deadline already classified it);
 * - a request that does not fit the window: `LoopError('context_exceeded')`; a used-up quota (even
 *   sent as a 429) or refused credentials (401, 403): `LoopError('user_input_required')`, with
 *   `details.reason` `quota` or `credentials` — no retry or other model helps;
 * - a transient failure (408, 429, 5xx, 529, overloaded, resets, refused connections, timeouts): a
 *   retryable `ToolError` (`rate_limited`, `overloaded`, `upstream_error`, `network_error`,
 *   `timeout`) with `retryAfterMs` from `retry-after-ms` / `Retry-After`, and `details.status`,
 *   `details.providerMessage` (redacted, capped) for the report;
 * - anything else (a 400, an adapter's bug): the throwable unchanged, which ends the run as `model_failed`.
 */
export function classifyModelFailure(error: unknown, classifier: Classifier, secrets: readonly string[]): unknown {
  let shallot: boolean
  try {
    shallot = LoopError.is(error) || ToolError.is(error)
  } catch {
    return error
  }
  if (shallot) return error
  const facts = factsOf(error)
  if (facts === undefined) return error
  const classified = classifier.tryClassify(error)
  const quote = sanitize(facts.provider?.message ?? facts.detail ?? '', { maxLength: MAX_QUOTE, secrets: [...secrets] })
  const details: Record<string, unknown> = {}
  if (facts.status !== undefined) details.status = facts.status
  if (facts.provider?.type !== undefined) details.type = facts.provider.type
  if (facts.provider?.code !== undefined) details.code = facts.provider.code
  if (quote !== '') details.providerMessage = quote
  const ending = runEnding(facts, classified)
  if (ending !== undefined) {
    const text = ENDING_TEXT[ending.reason]
    const label = [facts.status, facts.provider?.code ?? facts.provider?.type].filter((p) => p !== undefined).join(' ')
    const message = `${text}${label === '' ? '' : ` (${label})`}${quote === '' ? '' : `: ${quote}`}`
    return new LoopError(ending.kind, message, {
      cause: error,
      details: ending.kind === 'context_exceeded' ? details : { ...details, reason: ending.reason },
    })
  }
  if (classified === undefined || !classified.retryable) return error
  return new ToolError(classified.code, classified.message, {
    category: classified.category,
    retryable: true,
    safeToRepeat: classified.safeToRepeat,
    ...(classified.retryAfterMs === undefined ? {} : { retryAfterMs: classified.retryAfterMs }),
    cause: error,
    details: { ...classified.details, ...details },
  })
}

/**
 * The model-call side of the error classifier: every failure leaving the layers inside it is
 * classified once, by {@link classifyModelFailure}, so a retry, breaker or fallback layer placed
 * outside reads the same typed facts (`ToolError.retryable`, `retryAfterMs`, the code) for every
 * provider and adapter.
 */
export function modelClassifierLayer(classifier: Classifier, secrets: readonly string[]): ModelMiddleware {
  return async function errorClassifierModel(ctx, next) {
    try {
      await next()
    } catch (err) {
      // A cancelled run ends as the run's reason; core says so, whatever the adapter threw on its way out.
      if (ctx.run.signal.aborted) throw err
      // An outer layer's deadline explains the abort better than the adapter's AbortError.
      if (ctx.signal.aborted && (ToolError.is(ctx.signal.reason) || LoopError.is(ctx.signal.reason))) throw ctx.signal.reason
      throw classifyModelFailure(err, classifier, secrets)
    }
  }
}
