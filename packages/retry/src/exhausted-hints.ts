import { type ToolEffect, ToolError, type ToolErrorJSON } from '@shallot/core'

/** What the model may do instead, by effect: a read may change its arguments; a write may not be invited to (a new write). */
function instead(effect: ToolEffect | undefined): string {
  return effect === 'read'
    ? 'Use another tool or source, change the arguments, or tell the user it is unavailable.'
    : 'Use another tool, or tell the user it is unavailable; do not change the arguments (that would be another write).'
}

const seconds = (ms: number) => `${Math.max(1, Math.ceil(ms / 1000))} s`

/**
 * Whether a keyed write's failure leaves its outcome open: an `idempotent` tool's failure that does not prove nothing
 * happened. Its identical repeat is always sent: the same key goes upstream, which answers from its first result.
 *
 * @example
 * mayHaveLanded('idempotent', timeoutError) // true: repeat it, the key makes that safe
 */
export function mayHaveLanded(effect: ToolEffect | undefined, error: Pick<ToolErrorJSON, 'safeToRepeat'>): boolean {
  return effect === 'idempotent' && error.safeToRepeat !== true
}

/** What the model's identical repeat will get, as the exhausted call's hint says it. */
export type NextRepeat =
  | { readonly kind: 'sent' }
  | { readonly kind: 'keyed' }
  | { readonly kind: 'after_retry_after'; readonly inMs: number }
  | { readonly kind: 'answered'; readonly forMs: number }

/**
 * The error a call ends with when its retries ran out: the same code, message and `safeToRepeat`, no
 * `retryAfterMs`, not retryable, and a hint that says what the identical repeat will get — the model is told one
 * thing and the stack does what it said — and never invites new arguments for a write.
 *
 * @example
 * throw ranOutOn(err, { tool: 'find_order', attempts: 3, effect: 'read', next: { kind: 'answered', forMs: 2000 } })
 */
export function ranOutOn(
  error: ToolError,
  facts: { readonly tool: string; readonly attempts: number; readonly effect: ToolEffect | undefined; readonly next: NextRepeat },
): ToolError {
  const { tool, attempts, effect, next } = facts
  const failed = `${tool} failed all ${attempts} attempts with these arguments (${error.code})`
  const hint =
    next.kind === 'keyed'
      ? `${failed} and may have taken effect. Repeating this identical call is safe: it carries the same idempotency key, so the service answers it from the first request if that one landed. Do not change the arguments: that would be a new request.`
      : next.kind === 'after_retry_after'
        ? `${failed}; the service asked to wait, so the identical call will wait ${seconds(next.inMs)} and be sent once more. ${instead(effect)}`
        : next.kind === 'answered'
          ? `${failed}; the identical call will not be sent again for ${seconds(next.forMs)}. ${instead(effect)}`
          : `${failed}; the identical call will be sent once more, without retries. ${instead(effect)}`
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: false,
    safeToRepeat: error.safeToRepeat,
    hint,
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
  })
}

/**
 * The failure an identical repeat is answered with inside its cooldown, without a request: the same code and
 * message, not retryable (nothing outside may repeat it), and a hint that says when it will be sent again.
 *
 * @example
 * throw answeredFrom(entry.error, { tool: 'find_order', failures: 3, sinceMs: 150, inMs: 1850, effect: 'read', sentAt: 0 })
 */
export function answeredFrom(
  error: ToolErrorJSON,
  facts: {
    readonly tool: string
    readonly failures: number
    readonly sinceMs: number
    readonly inMs: number
    readonly effect: ToolEffect | undefined
    readonly sentAt: number
  },
): ToolError {
  const { tool, failures, sinceMs, inMs, effect } = facts
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: false,
    safeToRepeat: false,
    hint:
      `${tool} failed ${failures} requests in a row with these arguments, the last ${Math.round(sinceMs / 1000)} s ago in this run, ` +
      `so this repeat was not sent to the upstream; the identical call will be sent again in ${seconds(inMs)}. ${instead(effect)}`,
    details: { answeredFromFailure: true, failures, lastSentAt: facts.sentAt },
  })
}
