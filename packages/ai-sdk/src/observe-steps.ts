import type { TurnRecord } from '@shallot/agent'
import type { RunContext, Stack, ToolCall, ToolResult } from '@shallot/core'

/** A tool call of the current step that went through the stack, with what it ended as. */
export interface SettledCall {
  readonly call: ToolCall
  readonly result: ToolResult
}

/** What a `shallotTools()` set remembers between the SDK's steps: the turns shown, the current step's settled calls. */
export interface StepLedger {
  turns: number
  readonly settled: Map<string, SettledCall>
  /** Steps already shown (a stop condition may be listed twice, or asked again for the same steps). */
  readonly shown: WeakSet<object>
  /** The completed steps with calls, as a stopped run's report tells them. */
  readonly records: TurnRecord[]
}

export const newStepLedger = (): StepLedger => ({ turns: 0, settled: new Map(), shown: new WeakSet(), records: [] })

const recordOf = (r: ToolResult) => ({
  id: r.callId,
  name: r.name,
  ok: r.ok,
  ...(r.error === undefined ? {} : { code: r.error.code }),
  attempts: r.attempts,
  replayed: r.replayed,
})

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** Reads a property without letting a throwing getter or a proxy trap escape. */
function read(value: unknown, key: string): unknown {
  try {
    return isObject(value) ? value[key] : undefined
  } catch {
    return undefined
  }
}

/**
 * Shows the SDK's last step to the layers that watch turns (`stuckLoop({ convergence })`), as shallot's
 * `createAgent` shows each completed turn: the step's text, its tool calls in the model's order and their
 * results, for the calls that went through the stack; and records it for the report of a stop. The SDK asks its stop conditions (`stopWhen`, where
 * `stopOnHardError` goes) after every step whose tool calls all have results, before the next step; that is
 * when a turn is complete. A step is shown once; one without a settled call is not shown. A `LoopError` from
 * a layer is thrown; anything else a layer throws is logged by the stack and the generation goes on.
 */
export function observeLastStep(stack: Stack, run: RunContext, ledger: StepLedger, steps: unknown): void {
  const step = Array.isArray(steps) ? (steps.at(-1) as unknown) : undefined
  if (!isObject(step) || ledger.shown.has(step)) return
  ledger.shown.add(step)
  if (ledger.settled.size === 0) return
  // Every call of the step settled before the SDK asked: what is noted belongs to this step, and no later one.
  const settled = new Map(ledger.settled)
  ledger.settled.clear()
  const toolCalls = read(step, 'toolCalls')
  const calls: ToolCall[] = []
  const results: ToolResult[] = []
  for (const part of Array.isArray(toolCalls) ? toolCalls : []) {
    const id = read(part, 'toolCallId')
    const done = typeof id === 'string' ? settled.get(id) : undefined
    if (done === undefined) continue
    calls.push(done.call)
    results.push(done.result)
  }
  if (calls.length === 0) return
  const said = read(step, 'text')
  const text = typeof said === 'string' && said !== '' ? said : undefined
  ledger.turns++
  ledger.records.push({ turn: ledger.turns, ...(text === undefined ? {} : { text }), calls: results.map(recordOf) })
  stack.observeTurn?.({ turn: ledger.turns, text, calls, results }, run)
}
