import { type Json, type LoopError, renderError, type ToolCall, ToolError, type ToolResult } from '@shallot/core'
import type { CallRecord, PendingTurn, SettledCall } from './checkpoints.js'
import { settledBeside } from './turn-dispatch.js'

// What the checkpoints and the transcript keep of a turn's calls.

const TRUNCATED = new ToolError(
  'output_truncated',
  'your output was cut off by the output-token limit, so this tool call was not run: its arguments are incomplete',
  { category: 'recoverable', hint: 'send smaller arguments: split the work into several calls, or write less in each one' },
).toJSON()

/** The answers to calls of a reply cut by the output-token limit: none of them ran, the model reads why. */
export function truncatedResults(calls: readonly ToolCall[]): ToolResult[] {
  return calls.map((call) => ({
    callId: call.id,
    name: call.name,
    ok: false,
    content: renderError(TRUNCATED, call, {}),
    error: TRUNCATED,
    attempts: 0,
    durationMs: 0,
    replayed: false,
    trace: [],
  }))
}

export function settledCall(result: ToolResult): SettledCall {
  const base = {
    callId: result.callId,
    name: result.name,
    ok: result.ok,
    content: result.content,
    attempts: result.attempts,
    replayed: result.replayed,
  }
  return result.error === undefined ? base : { ...base, error: result.error }
}

export function record(result: ToolResult): CallRecord {
  const base = { id: result.callId, name: result.name, ok: result.ok, attempts: result.attempts, replayed: result.replayed }
  return result.error === undefined ? base : { ...base, code: result.error.code }
}

/** The checkpointed form of a turn stopped for a person: its calls, what settled, and who waits. */
export function pendingTurnOf(inFlight: { turn: number; response: PendingTurn['response'] }, stop: LoopError): PendingTurn {
  const results: Record<string, SettledCall> = {}
  for (const result of settledBeside(stop)) {
    // A call id is the model's text: `__proto__` must be a key like any other.
    Object.defineProperty(results, result.callId, { value: settledCall(result), enumerable: true, writable: true, configurable: true })
  }
  return { turn: inFlight.turn, response: inFlight.response, results, pending: stop.details.pending as Json[] }
}
