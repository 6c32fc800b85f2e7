import { LoopError, type ModelContext, type ModelMiddleware, type ModelNext, sanitize, ToolError } from '@shallot/core'
import type { Classifier } from './create-classifier.js'
import { type ErrorFacts, errorFacts } from './error-facts.js'
import { modelRunEnding, modelRunEndingError } from './model-run-ending.js'

/** Longest provider message quoted in a model failure (the report reads it, not the model). */
const MAX_QUOTE = 500

function factsOf(error: unknown): ErrorFacts | undefined {
  try {
    return errorFacts(error)
  } catch {
    return undefined
  }
}

/** The text that may name the context window or the quota: the provider's own message and the messages along the chain. */
function textOf(facts: ErrorFacts): string {
  return [facts.provider?.message ?? '', ...facts.messages].join('\n').slice(0, 4096)
}

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
  // The one table of failures that end the run (model-run-ending.ts), shared with @shallot/ai-sdk's classifyModelError.
  const ending = modelRunEnding({
    status: facts.status,
    labels: [...facts.codes, ...facts.types],
    text: textOf(facts),
    quota: classified?.code === 'quota_exceeded',
  })
  if (ending !== undefined) {
    const label = facts.provider?.code ?? facts.provider?.type
    return modelRunEndingError(ending, { status: facts.status, label, quote, details, cause: error })
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
 * `errorClassifier()`'s model side: every failure leaving the layers inside it is
 * classified once, by {@link classifyModelFailure}, so a retry, breaker or fallback layer placed
 * outside reads the same typed facts (`ToolError.retryable`, `retryAfterMs`, the code) for every
 * provider and adapter.
 */
export function modelClassifierLayer(classifier: Classifier, secrets: readonly string[]): ModelMiddleware {
  return async function errorClassifier(ctx: ModelContext, next: ModelNext): Promise<void> {
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
