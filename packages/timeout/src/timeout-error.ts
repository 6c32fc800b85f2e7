import { type AnyTool, ToolError } from '@shallot/core'
import { formatSeconds } from './format-seconds.js'

/**
 * The soft error of an attempt that missed its deadline: transient and retryable, but never
 * `safeToRepeat`, because the tool may have reached the world before it was stopped.
 *
 * @example
 * timeoutError('search', undefined, 2000, 1).message // "Tool 'search' timed out after 2s"
 */
export function timeoutError(name: string, tool: AnyTool | undefined, timeoutMs: number, attempt: number): ToolError {
  return new ToolError('timeout', `Tool '${name}' timed out after ${formatSeconds(timeoutMs)}`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: false,
    hint:
      tool?.effect === 'read'
        ? 'try again, or ask for less at once'
        : 'the call may still have taken effect; check before repeating it, or ask for less at once',
    details: { timeoutMs, attempt },
  })
}
