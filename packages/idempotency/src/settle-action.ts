import { type ToolEffect, ToolError } from '@shallot/core'

/** What a failed call does to its record: `release` it (the next identical call runs) or record it as `unknown`. */
export type SettleAction = 'release' | 'unknown'

/**
 * Decides the fate of a failed call's record. Released when nothing can have reached the world:
 * no attempt reached the tool, the tool is `idempotent`, or the error is `safeToRepeat`. Every
 * other failure of a `write` tool, a hard `LoopError` and a foreign throw included, leaves the
 * outcome unknown.
 *
 * @example
 * settleAction('write', new ToolError('timeout', 'timed out'), true)      // 'unknown'
 * settleAction('write', new ToolError('rate_limited', '429', { safeToRepeat: true }), true) // 'release'
 */
export function settleAction(effect: ToolEffect, error: unknown, reachedTool: boolean): SettleAction {
  if (!reachedTool || effect !== 'write') return 'release'
  return ToolError.is(error) && error.safeToRepeat ? 'release' : 'unknown'
}

/**
 * Whether a failed call may have reached the world, so nobody knows if it took effect: it reached the tool, and the
 * error does not prove otherwise (`safeToRepeat`). For a `write` the record then says unknown; for an `idempotent`
 * tool the record is released (its key makes a repeat safe), yet its outcome is just as open. Either way a tool
 * with `reconcile` is asked.
 *
 * @example
 * mayHaveLanded(new ToolError('timeout', 'timed out'), true)  // true
 * mayHaveLanded(new ToolError('rate_limited', '429', { safeToRepeat: true }), true) // false
 */
export function mayHaveLanded(error: unknown, reachedTool: boolean): boolean {
  return reachedTool && !(ToolError.is(error) && error.safeToRepeat)
}
