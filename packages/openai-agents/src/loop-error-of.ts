import { LoopError } from '@shallot/core'

/**
 * The shallot `LoopError` behind an error from the Agents SDK: the error itself, or the one the SDK
 * wrapped (`ToolCallError.error`, `cause`), a few levels deep. `undefined` when there is none.
 *
 * @example
 * for await (const event of streamed) render(event)
 * const hard = loopErrorOf(streamed.error)
 * if (hard) console.error(`stopped: ${hard.kind}`)
 */
export function loopErrorOf(error: unknown): LoopError | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (LoopError.is(current)) return current
    const wrapped = current as { error?: unknown; cause?: unknown }
    current = wrapped.error ?? wrapped.cause
  }
  return undefined
}
