import { LoopError } from '@shallot/core'

/**
 * The shallot `LoopError` behind an error `agent.invoke()` rejected with. LangChain wraps what a
 * middleware throws in a `MiddlewareError` (the `LoopError` is its `cause`), so `LoopError.is(error)`
 * alone misses it.
 *
 * @example
 * try { await agent.invoke(input) } catch (error) { const hard = loopErrorOf(error); if (hard) report(hard.kind) }
 */
export function loopErrorOf(error: unknown): LoopError | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 10 && current !== undefined && current !== null; depth++) {
    if (LoopError.is(current)) return current
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}
