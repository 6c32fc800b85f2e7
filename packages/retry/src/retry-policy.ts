import { closest } from '@shallot/core/kit'
import { z } from 'zod'
import { checkBaseCap, delayMsSchema } from './backoff/backoff.js'

/**
 * The named backoffs a policy (or a config file) may choose.
 *
 * @example
 * BACKOFF_NAMES.includes(config.backoff)
 */
export const BACKOFF_NAMES = ['full-jitter', 'equal-jitter', 'decorrelated-jitter', 'exponential', 'constant', 'none'] as const

/** One of {@link BACKOFF_NAMES}. */
export type BackoffName = (typeof BACKOFF_NAMES)[number]

/** The message for a backoff that is not one of the names, with the closest name when there is one. */
export function unknownBackoffMessage(input: unknown, alsoObjects: boolean): string {
  const names = BACKOFF_NAMES.map((n) => `'${n}'`).join(', ')
  const guess = typeof input === 'string' ? closest(input, BACKOFF_NAMES) : undefined
  const objects = alsoObjects ? ' or an object with next(attempt, error, random)' : ''
  return `must be one of ${names}${objects}${guess === undefined ? '' : `; did you mean '${guess}'?`}`
}

const CODE = /^[a-z][a-z0-9_]*$/

const EXPONENTIAL_FAMILY: ReadonlySet<string> = new Set(['full-jitter', 'equal-jitter', 'decorrelated-jitter', 'exponential'])

/** Total calls (the original one included): a whole number ≥ 1, or `Infinity` to let only the backoff and the ceiling decide. */
export const maxAttemptsSchema = z.union([z.number().int().min(1), z.literal(Number.POSITIVE_INFINITY)], {
  error: 'must be a whole number ≥ 1 (or Infinity)',
})

const costSchema = z.number().min(0).max(1_000_000)

/** The longest outage budget a model call may be given: a day. */
const MAX_OUTAGE_BUDGET_MS = 24 * 3600 * 1000

/** The fields a policy shares with `retry()`'s options; `retryOptionsSchema` widens `backoff` to accept objects. */
export const retryPolicyShape = {
  /** Which backoff; `constant` waits `baseMs` every time, `none` never repeats. */
  backoff: z.enum(BACKOFF_NAMES, { error: (issue) => unknownBackoffMessage(issue.input, false) }).default('full-jitter'),
  /** First ceiling of the exponential family (default 500), or the delay of `constant`. */
  baseMs: delayMsSchema.optional(),
  /** Largest delay of the exponential family (default 8000). */
  capMs: delayMsSchema.optional(),
  /** Total calls, counting the original one. Default 3. More than 6 meets the hard ceiling, which ends the run. */
  maxAttempts: maxAttemptsSchema.default(3),
  /**
   * The longest `Retry-After` waited for; a longer one gives the call up at once (`retry_after_too_long`) instead of
   * retrying sooner than the server asked. Default: `capMs` for tool calls, 60,000 for model calls.
   */
  maxRetryAfterMs: delayMsSchema.optional(),
  /** Gives up (softly) rather than start a wait that would end past this many ms since the first attempt. Default: no limit. */
  maxElapsedMs: z.number().min(0).optional(),
  /**
   * Model calls only: ride out an outage for this long. A transient failure is repeated past `maxAttempts` (only
   * `perCode` and this budget bound it) while each wait ends within this many ms of the first attempt; a
   * `Retry-After` that would not is given up at once. Default, and `0`: none (attempts alone bound a model call).
   */
  outageBudgetMs: z
    .number()
    .min(0)
    .max(MAX_OUTAGE_BUDGET_MS, { error: `must be at most ${MAX_OUTAGE_BUDGET_MS} ms (a day): a longer outage is for parking the run` })
    .optional(),
  /** `maxAttempts` per error code. Default `{ timeout: { maxAttempts: 2 } }` (never more than `maxAttempts`). */
  perCode: z.record(z.string(), z.object({ maxAttempts: maxAttemptsSchema }).strict()).default({}),
  /** Retry budget prices, after the AWS SDK's standard mode: tokens per retry, per timeout retry, and given back per success. */
  retryBudgetCosts: z
    .object({ retry: costSchema.default(5), timeout: costSchema.default(10), success: costSchema.default(1) })
    .strict()
    .prefault({}),
}

/** Checks across fields: `perCode` keys are error codes; `baseMs` may not exceed `capMs` for the exponential family. */
export function checkPolicy(
  policy: { backoff: unknown; baseMs?: number | undefined; capMs?: number | undefined; perCode: Record<string, unknown> },
  ctx: z.RefinementCtx,
) {
  for (const code of Object.keys(policy.perCode)) {
    if (!CODE.test(code)) {
      ctx.addIssue({
        code: 'custom',
        path: ['perCode', code],
        message: `"${code}" is not an error code; codes are snake_case, like rate_limited`,
      })
    }
  }
  if (typeof policy.backoff === 'string' && EXPONENTIAL_FAMILY.has(policy.backoff)) checkBaseCap(policy, ctx)
}

/**
 * A retry policy as plain data, so a config file can name it and swap it:
 * `{ backoff: 'full-jitter', baseMs: 500, capMs: 8000, maxAttempts: 3, perCode: { timeout: { maxAttempts: 2 } } }`.
 * `retry()` accepts the same object.
 *
 * @example
 * const policy = retryPolicySchema.parse(JSON.parse(readFileSync('retry.json', 'utf8')))
 * createStack({ middleware: [retry(policy)], tools })
 */
export const retryPolicySchema = z.object(retryPolicyShape).strict().superRefine(checkPolicy)

/** A parsed policy, defaults filled in. */
export type RetryPolicy = z.output<typeof retryPolicySchema>

/** A policy as written in code or config: every field optional. */
export type RetryPolicyInput = z.input<typeof retryPolicySchema>
