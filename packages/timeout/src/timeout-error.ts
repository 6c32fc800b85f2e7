import { type AnyTool, MAY_HAVE_TAKEN_EFFECT, ToolError } from '@shallot/core'
import { formatSeconds } from './format-seconds.js'

/**
 * The soft error of an attempt that missed its deadline: transient and retryable, but never
 * `safeToRepeat`, because the tool may have reached the world before it was stopped. A `write` is
 * told so, and what to do instead of repeating it; a `read` or `idempotent` tool to try again.
 *
 * @example
 * timeoutError('search', undefined, 2000, 1).message // "Tool 'search' timed out after 2s"
 */
export function timeoutError(name: string, tool: AnyTool | undefined, timeoutMs: number, attempt: number): ToolError {
  return new ToolError('timeout', `Tool '${name}' timed out after ${formatSeconds(timeoutMs)}`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: false,
    // A write that timed out is not repeated (retry will not, idempotency refuses the identical call): never say "try again".
    hint: tool?.effect === 'write' || tool === undefined ? MAY_HAVE_TAKEN_EFFECT : 'try again, or ask for less at once',
    details: { timeoutMs, attempt },
  })
}
