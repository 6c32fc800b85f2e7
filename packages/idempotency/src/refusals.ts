import { ToolError } from '@shallot/core'

const WHY_UNKNOWN = {
  recorded: 'it failed in a way that does not show whether it took effect',
  lease_expired: 'its worker stopped before reporting back',
  corrupt: 'its stored record cannot be read',
} as const

/** The next step that can work when nobody can tell whether a write took effect. */
const LOOK_IT_UP =
  'find out whether it took effect with a tool that looks it up (e.g. find the order) and continue from what you find; if you have no such tool, ask the user'

/** What a reconciliation that could not tell tried: how many questions, and the reconciler's own hint, if any. */
export interface Tried {
  readonly attempts: number
  readonly hint: string | undefined
}

/**
 * The soft answer to an identical call whose first attempt may or may not have reached the world.
 * Not retryable and not safe to repeat. It never invites a repeat: it names the next step that can
 * work (look it up, or ask the user), and, when the tool's `reconcile` was asked, says so.
 *
 * @example
 * throw outcomeUnknown('charge_card', 'recorded', key)
 * throw outcomeUnknown('charge_card', 'lease_expired', key, { attempts: 3, hint: undefined })
 */
export function outcomeUnknown(tool: string, reason: 'recorded' | 'lease_expired' | 'corrupt', key: string, tried?: Tried): ToolError {
  const why = WHY_UNKNOWN[reason]
  const message =
    tried === undefined
      ? `An identical earlier call of ${tool} may or may not have taken effect (${why}), so this call was not run; the same call will be refused the same way.`
      : `An identical earlier call of ${tool} may or may not have taken effect (${why}), and checking ${times(tried.attempts)} could not tell whether it did, so this call was not run.`
  return new ToolError('outcome_unknown', message, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: false,
    hint: tried?.hint ?? LOOK_IT_UP,
    details: tried === undefined ? { key, reason } : { key, reason, reconciled: 'unknown', attempts: tried.attempts },
  })
}

const times = (n: number) => (n === 1 ? 'once' : `${n} times`)

/**
 * A write's own error after its `reconcile` found it did not take effect: the same error, now safe
 * to repeat (the record was released, so the identical call runs). A foreign throw is returned as is.
 *
 * @example
 * throw notTakenEffect(err)
 */
export function notTakenEffect(error: unknown): unknown {
  if (!ToolError.is(error)) return error
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: error.retryable,
    safeToRepeat: true,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    hint: 'checked: it did not take effect, so repeating the identical call is safe',
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
  })
}

/** What a keyed write may do when nobody can tell whether it took effect: the identical call, never new arguments. */
const REPEAT_KEYED =
  'repeating the identical call is safe: it carries the same idempotency key, so the service answers it from the first request if that one landed; do not change the arguments (that would be a new request)'

/**
 * A write's own error after its `reconcile` could not tell whether it took effect: the same error,
 * not to be repeated (identical calls are refused while the record says unknown), with the hint
 * saying what was tried and the next step that can work. A keyed write (`keyed`: an `idempotent`
 * tool, its key forwarded upstream) is told the identical repeat is safe instead. A foreign throw
 * is returned as is.
 *
 * @example
 * throw stillUnknown(err, { attempts: 3, hint: undefined })
 */
export function stillUnknown(error: unknown, tried: Tried, keyed = false): unknown {
  if (!ToolError.is(error)) return error
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: false,
    safeToRepeat: false,
    hint: `checked ${times(tried.attempts)} whether it took effect and could not tell: ${keyed ? REPEAT_KEYED : (tried.hint ?? LOOK_IT_UP)}`,
    details: { ...error.details, reconciled: 'unknown', attempts: tried.attempts },
    cause: error,
  })
}

/**
 * The soft answer to an explicit idempotency key reused with different arguments. The tool did not run.
 *
 * @example
 * throw idempotencyMismatch('charge_card', 'order-42')
 */
export function idempotencyMismatch(tool: string, key: string): ToolError {
  return new ToolError(
    'idempotency_mismatch',
    `The idempotency key "${key}" was already used for ${tool} with different arguments, so this call was not run.`,
    {
      category: 'recoverable',
      retryable: false,
      safeToRepeat: true,
      hint: 'repeat the earlier call with exactly the same arguments, or use a new idempotency key for a different request',
      details: { key },
    },
  )
}

/**
 * The soft answer when an identical call in another worker is still running after the wait limit.
 *
 * @example
 * throw stillInFlight('charge_card', key, 10_000)
 */
export function stillInFlight(tool: string, key: string, waited: number): ToolError {
  // Whole milliseconds: the system clock's reading has a fraction the model has no use for.
  const waitedMs = Math.round(waited)
  return new ToolError(
    'conflict',
    `An identical call of ${tool} is still in progress elsewhere (waited ${waitedMs} ms), so this call was not run.`,
    {
      category: 'transient',
      retryable: true,
      safeToRepeat: true,
      hint: 'wait, then repeat the identical call to receive the first call’s result',
      details: { key, waitedMs },
    },
  )
}

/**
 * The soft answer to an idempotency key that is missing or malformed. The tool did not run.
 *
 * @example
 * throw invalidKey('charge_card', 'is empty', 'argument "orderRef"')
 */
export function invalidKey(tool: string, problem: string, source: string): ToolError {
  return new ToolError('invalid_arguments', `The idempotency key for ${tool} (from ${source}) ${problem}.`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: 'an idempotency key is 1-255 printable ASCII characters, unique per request, e.g. "order-2026-00042"',
  })
}

/**
 * The answer when the store failed before the call started. Fails closed: a write never runs
 * without its record. Transient and safe to repeat, since nothing ran. A memory store full of
 * records it may not evict (its `store_full` error) is said so.
 *
 * @example
 * throw storeUnavailable('charge_card', err)
 */
export function storeUnavailable(tool: string, cause: unknown): ToolError {
  if (ToolError.is(cause) && cause.code === 'store_full') {
    return new ToolError(
      'store_unavailable',
      `The idempotency store is full of calls in progress and calls whose outcome is unknown, so ${tool} was not run.`,
      {
        category: 'transient',
        retryable: true,
        safeToRepeat: true,
        hint: 'try the identical call again once other calls have finished; if this keeps happening, tell the user',
        cause,
      },
    )
  }
  return new ToolError('store_unavailable', `The idempotency store did not answer, so ${tool} was not run.`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    hint: 'try the identical call again in a moment',
    cause,
  })
}

/**
 * The answer when a `scope` function returns something that cannot be a scope: a configuration
 * fault the model cannot fix, so the category is `fatal`. The tool did not run.
 *
 * @example
 * throw invalidScope('charge_card', 'must be 1-128 printable ASCII characters without spaces, got ""')
 */
export function invalidScope(tool: string, problem: string): ToolError {
  return new ToolError('invalid_scope', `The idempotency scope for ${tool} ${problem}, so the call was not run.`, {
    category: 'fatal',
    retryable: false,
    safeToRepeat: true,
    hint: 'this needs a fix in the agent configuration (idempotency scope), not a different call',
  })
}
