import { abortReason, LoopError, type MutableRun, type Stack, type ToolCall, type ToolResult } from '@shallot/core'
import { SignalLink } from '@shallot/core/kit'
import type { SettledCall } from './checkpoints.js'

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

/** True for a stop that waits for a person's answer to named calls (the policy's approval stop). */
export function isWaiting(err: unknown): err is LoopError {
  return LoopError.is(err) && err.kind === 'user_input_required' && Array.isArray(err.details.pending)
}

const settledOfStop = new WeakMap<LoopError, readonly ToolResult[]>()

/** The results of the calls that settled in a turn that stopped waiting (empty for any other error). */
export const settledBeside = (error: LoopError): readonly ToolResult[] => settledOfStop.get(error) ?? []

/** A result of an earlier attempt at the turn standing in for its call: its step was spent, it never runs again. */
function keptResult(settled: SettledCall): ToolResult {
  const base = {
    callId: settled.callId,
    name: settled.name,
    ok: settled.ok,
    content: settled.content,
    attempts: settled.attempts,
    durationMs: 0,
    replayed: settled.replayed,
    trace: [],
  }
  return settled.error === undefined ? base : { ...base, error: settled.error }
}

/**
 * The waiting entries of the stop of one turn's call, each naming that call: an entry for a call a
 * layer made inside it (a fallback tool's, say) gets `turnCallId`, the call of the turn to replay.
 */
function pendingUnder(stop: LoopError, turnCallId: string): unknown[] {
  return (stop.details.pending as unknown[]).map((entry) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return entry
    const { callId } = entry as { callId?: unknown }
    return callId === turnCallId ? entry : { ...entry, turnCallId }
  })
}

/** One stop naming every waiting call of the turn, so a person answers them all at once. */
function waitingStop(stops: ReadonlyArray<readonly [LoopError, string]>, settled: readonly ToolResult[]): LoopError {
  const first = (stops[0] as readonly [LoopError, string])[0]
  const pending = stops.flatMap(([stop, callId]) => pendingUnder(stop, callId))
  const unchanged = stops.length === 1 && pending.every((entry, i) => entry === (first.details.pending as unknown[])[i])
  const stop = unchanged ? first : new LoopError(first.kind, first.message, { details: { ...first.details, pending }, cause: first })
  settledOfStop.set(stop, settled)
  return stop
}

/** Where a turn's calls go: the stack, the run they spend, its stop (if the caller can cancel it), and how many at once. */
export interface TurnPlace {
  readonly stack: Stack
  readonly run: MutableRun
  readonly stopRun: SignalLink | undefined
  readonly maxParallel: number
}

const NOTHING_KEPT: Readonly<Record<string, SettledCall>> = Object.freeze({})

/** What a turn of one call rejects with when the stack rejected: the run's reason once its signal is aborted. */
function aloneStop(err: unknown, stopRun: SignalLink | undefined): unknown {
  if (stopRun === undefined) return abortReason({ reason: err })
  stopRun.abort(err)
  return abortReason(stopRun)
}

/**
 * Dispatches one turn's calls on the run's own signal. One hard error (the stack's rejection,
 * escalations included) ends the run, so it aborts that signal, which stops the sibling calls; the
 * turn then rejects with the run's reason. A run nobody can cancel has no signal of its own
 * (`stopRun` undefined): a turn of several calls then gets one for itself. A stop that waits for a
 * person (`user_input_required` naming `pending` calls) does not abort: the siblings finish, and the
 * turn rejects with one stop naming every waiting call, the settled results beside it
 * (`settledBeside`). Calls in `kept` settled in an earlier attempt at this turn and are not
 * dispatched again.
 */
export async function dispatchTurn(
  { stack, run, stopRun, maxParallel }: TurnPlace,
  calls: readonly ToolCall[],
  kept: Readonly<Record<string, SettledCall>> = NOTHING_KEPT,
): Promise<ToolResult[]> {
  const isKept = (call: ToolCall) => Object.hasOwn(kept, call.id)
  const fresh = calls.filter((call) => !isKept(call))
  const settled = new Map<ToolCall, PromiseSettledResult<ToolResult>>()
  if (fresh.length === 1) {
    const call = fresh[0] as ToolCall
    try {
      settled.set(call, { status: 'fulfilled', value: await stack.dispatch(call, { run }) })
    } catch (err) {
      if (!isWaiting(err)) throw aloneStop(err, stopRun)
      settled.set(call, { status: 'rejected', reason: err })
    }
  } else if (fresh.length > 1) {
    // A run nobody can cancel: the turn's own stop, handed to the stack as the calls' signal.
    const stop = stopRun ?? new SignalLink()
    const options = stopRun === undefined ? { run, signal: stop.signal } : { run }
    const dispatchOne = async (call: ToolCall) => {
      try {
        return await stack.dispatch(call, options)
      } catch (err) {
        if (!isWaiting(err)) stop.abort(err)
        throw err
      }
    }
    const outcomes = await pool(fresh, maxParallel, dispatchOne)
    const failure = outcomes.find((s): s is PromiseRejectedResult => s.status === 'rejected' && !isWaiting(s.reason))
    if (failure !== undefined) throw stop.aborted ? abortReason(stop) : failure.reason
    for (const [index, call] of fresh.entries()) settled.set(call, outcomes[index] as PromiseSettledResult<ToolResult>)
  }
  const results: ToolResult[] = []
  const stops: Array<readonly [LoopError, string]> = []
  for (const call of calls) {
    const outcome = settled.get(call)
    if (outcome === undefined) results.push(keptResult(kept[call.id] as SettledCall))
    else if (outcome.status === 'fulfilled') results.push(outcome.value)
    else stops.push([outcome.reason as LoopError, call.id])
  }
  if (stops.length > 0) throw waitingStop(stops, results)
  return results
}
