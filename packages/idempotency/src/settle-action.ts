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
