import type { ToolErrorJSON, ToolResult } from '@shallot/core'

/**
 * What a wrapped tool returns when the stack answered with a soft error: plain JSON, so it survives
 * UI messages and `convertToModelMessages`. The model reads `content` (as a plain `text` tool
 * output); your code reads `error`.
 */
export interface SoftFailure {
  readonly type: 'shallot-soft-error'
  /** The structured soft error: code, category, message, hint, retry facts. */
  readonly error: ToolErrorJSON
  /** The text the model reads, as rendered by the stack (`renderError`). */
  readonly content: string
  readonly attempts: number
}

/**
 * Turns a failed {@link ToolResult} into the {@link SoftFailure} a wrapped tool returns.
 *
 * @example
 * const result = await stack.dispatch(call)
 * return result.ok ? result.value : softFailure(result)
 */
export function softFailure(result: ToolResult): SoftFailure {
  if (result.ok || result.error === undefined) throw new TypeError('softFailure() takes a failed ToolResult (ok: false)')
  return { type: 'shallot-soft-error', error: result.error, content: result.content, attempts: result.attempts }
}

/**
 * True when a tool output is a shallot soft error rather than the tool's own value.
 *
 * @example
 * for (const r of result.toolResults) if (isSoftFailure(r.output)) console.warn(r.toolName, r.output.error.code)
 */
export function isSoftFailure(output: unknown): output is SoftFailure {
  return (
    typeof output === 'object' &&
    output !== null &&
    (output as { type?: unknown }).type === 'shallot-soft-error' &&
    typeof (output as { content?: unknown }).content === 'string' &&
    typeof (output as { error?: unknown }).error === 'object'
  )
}
