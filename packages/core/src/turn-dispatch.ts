import { abortReason } from './channel.js'
import type { MutableRun } from './run.js'
import type { Stack } from './stack.js'
import type { ToolCall, ToolResult } from './types.js'

/** Runs `work` over `items` with at most `limit` at once; results in input order. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length)
  let nextIndex = 0
  const worker = async () => {
    while (nextIndex < items.length) {
      const index = nextIndex++
      try {
        results[index] = { status: 'fulfilled', value: await work(items[index] as T) }
      } catch (reason) {
        results[index] = { status: 'rejected', reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/**
 * Dispatches one turn's calls on the run's own signal alone: no per-call or per-turn signal to
 * combine. One hard error (the stack's rejection, escalations included) ends the run, so it aborts
 * that signal, which stops the sibling calls; the turn then rejects with the run's reason. A turn
 * of one call, the common case, skips the pool.
 */
export async function dispatchTurn(
  stack: Stack,
  calls: readonly ToolCall[],
  run: MutableRun,
  stopRun: AbortController,
  maxParallel: number,
): Promise<ToolResult[]> {
  if (calls.length === 1) {
    try {
      return [await stack.dispatch(calls[0] as ToolCall, { run })]
    } catch (err) {
      if (!stopRun.signal.aborted) stopRun.abort(err)
      throw abortReason(stopRun.signal)
    }
  }
  const dispatchOne = async (call: ToolCall) => {
    try {
      return await stack.dispatch(call, { run })
    } catch (err) {
      if (!stopRun.signal.aborted) stopRun.abort(err)
      throw err
    }
  }
  const settled = await pool(calls, maxParallel, dispatchOne)
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failure !== undefined) throw stopRun.signal.aborted ? abortReason(stopRun.signal) : failure.reason
  return settled.map((s) => (s as PromiseFulfilledResult<ToolResult>).value)
}
