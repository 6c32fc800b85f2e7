import { LoopError, ToolError } from '@shallot/core'
import type { LoopEntry, LoopVerdict } from './loop-ledger.js'

type Decided = NonNullable<LoopVerdict>

const ADVICE = 'Do not repeat it; try a different approach or ask the user.'

/**
 * The soft refusal the model reads instead of running the call again.
 *
 * @example
 * throw refusal('read_file', fp, { action: 'refuse', reason: 'repeated_failure', count: 3 }, entry)
 * // read_file failed 2 times with these arguments (last error: not_found: …). Do not repeat it; …
 */
export function refusal(tool: string, fp: string, verdict: Decided, entry: LoopEntry): ToolError {
  const message =
    verdict.reason === 'repeated_success'
      ? `${tool} returned the same result ${entry.same} times for these arguments; calling it again will not change it. Use the result you already have, try a different approach, or ask the user.`
      : verdict.reason === 'flailing'
        ? `${tool} failed ${entry.failures} times with these arguments, with changing errors (last error: ${entry.lastError}). ${ADVICE}`
        : `${tool} failed ${entry.same} times with these arguments (last error: ${entry.lastError}). ${ADVICE}`
  return new ToolError(verdict.reason === 'repeated_success' ? 'repeated_call' : 'repeated_failure', message, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    ...(entry.lastHint === '' ? {} : { hint: entry.lastHint }),
    details: { reason: verdict.reason, fingerprint: fp, count: verdict.count, lastError: entry.lastError },
  })
}

/**
 * The hard stop: the model kept making the same call after being told not to.
 *
 * @example
 * throw loopDetected('read_file', fp, { action: 'stop', reason: 'repeated_failure', count: 5 }, entry)
 */
export function loopDetected(tool: string, fp: string, verdict: Decided, entry: LoopEntry): LoopError {
  const what =
    verdict.reason === 'repeated_success'
      ? 'and got the same result every time'
      : verdict.reason === 'flailing'
        ? `and it kept failing (last error: ${entry.lastError})`
        : `and it failed the same way every time (last error: ${entry.lastError})`
  const details: Record<string, unknown> = { tool, reason: verdict.reason, count: verdict.count, fingerprint: fp }
  if (entry.lastError !== '') details.lastError = entry.lastError
  return new LoopError(
    'loop_detected',
    `${tool} was called ${verdict.count} times with the same arguments ${what}; the model is not adapting`,
    { details },
  )
}
