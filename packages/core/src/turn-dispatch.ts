import { setMaxListeners } from 'node:events'
import { abortReason } from './channel.js'
import type { MutableRun } from './run.js'
import type { Stack } from './stack.js'
import type { ToolCall, ToolResult } from './types.js'

function turnController(): AbortController {
  const controller = new AbortController()
  // Layers that wait abortably (a retry's backoff) listen on it directly; a wide turn must not warn at 11.
  setMaxListeners(0, controller.signal)
  return controller
}

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
 * Dispatches one turn's calls on the run's own signal: no per-call signal to combine. One hard
 * error (the stack's rejection, escalations included) ends the run, so it aborts that signal, which
 * stops the sibling calls; the turn then rejects with the run's reason. A run nobody can cancel has
 * no signal of its own (`stopRun` undefined): a turn of several calls then gets one for itself. A
 * turn of one call, the common case, skips the pool and needs no signal: it has no siblings to stop.
 */
export async function dispatchTurn(
  stack: Stack,
  calls: readonly ToolCall[],
  run: MutableRun,
  stopRun: AbortController | undefined,
  maxParallel: number,
): Promise<ToolResult[]> {
  if (calls.length === 1) {
    try {
      return [await stack.dispatch(calls[0] as ToolCall, { run })]
    } catch (err) {
      if (stopRun === undefined) throw abortReason({ reason: err })
      if (!stopRun.signal.aborted) stopRun.abort(err)
      throw abortReason(stopRun.signal)
    }
  }
  const stop = stopRun ?? turnController()
  const options = stopRun === undefined ? { run, signal: stop.signal } : { run }
  const dispatchOne = async (call: ToolCall) => {
    try {
      return await stack.dispatch(call, options)
    } catch (err) {
      if (!stop.signal.aborted) stop.abort(err)
      throw err
    }
  }
  const settled = await pool(calls, maxParallel, dispatchOne)
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failure !== undefined) throw stop.signal.aborted ? abortReason(stop.signal) : failure.reason
  return settled.map((s) => (s as PromiseFulfilledResult<ToolResult>).value)
}
