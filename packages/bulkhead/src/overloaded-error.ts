import { ToolError } from '@shallot/core'

/** Why a call was turned away: every slot and queue place taken, or it waited its longest in the queue. */
export type OverloadReason = 'queue_full' | 'queue_timeout'

export interface OverloadFacts {
  /** The tool the model asked for. */
  readonly tool: string
  /** The compartment's key (the tool's name unless a `key` function says otherwise). */
  readonly key: string
  readonly reason: OverloadReason
  /** Calls that may run at once under this key. */
  readonly limit: number
  /** Calls waiting under this key when the call was turned away. */
  readonly queued: number
  /** How long the call waited before it was turned away (0 when it never queued). */
  readonly waitedMs: number
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`

/**
 * The soft refusal of a call the bulkhead had no room for. `transient`, because room frees up as
 * earlier calls finish; `safeToRepeat: true`, because the call never reached the tool, not even a
 * write; `retryable: false`, because the queue already was the wait, and an immediate repeat only
 * adds to the crowd: the model decides whether to wait, call less at once, or do something else.
 *
 * @example
 * overloadedError({ tool: 'search', key: 'search', reason: 'queue_full', limit: 4, queued: 10, waitedMs: 0 }).message
 * // "tool 'search' is overloaded: 4 calls are running and 10 are waiting, the most allowed"
 */
export function overloadedError(facts: OverloadFacts): ToolError {
  const { tool, key, reason, limit, queued, waitedMs } = facts
  const subject = key === tool ? `tool '${tool}'` : `tool '${tool}' (${key})`
  const plural = limit === 1 ? 'call is' : 'calls are'
  const why =
    reason === 'queue_full'
      ? `${limit} ${plural} running and ${queued} ${queued === 1 ? 'is' : 'are'} waiting, the most allowed`
      : `no slot of ${limit} came free within ${seconds(waitedMs)}`
  return new ToolError('overloaded', `${subject} is overloaded: ${why}`, {
    category: 'transient',
    retryable: false,
    safeToRepeat: true,
    hint: 'the call did not run; wait for earlier calls to finish before calling it again, or make fewer calls at once',
    details: { key, reason, limit, queued, waitedMs },
  })
}
