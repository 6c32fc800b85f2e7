import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import type { RunContext, Stack, ToolCall, ToolResult } from '@shallot/core'

/** A tool call of the thread's current turn that went through the stack, with what it ended as. */
export interface SettledCall {
  readonly call: ToolCall
  readonly result: ToolResult
}

/** What a thread remembers between its turns: the turns shown so far, and the current turn's settled calls by id. */
export interface TurnLedger {
  turns: number
  readonly settled: Map<string, SettledCall>
}

export const newTurnLedger = (): TurnLedger => ({ turns: 0, settled: new Map() })

/** The model's text beside its tool calls, as the transcript of `createAgent` would hold it. */
function textOf(message: AIMessage): string | undefined {
  let text: unknown
  try {
    text = message.text
  } catch {
    return undefined
  }
  return typeof text === 'string' && text !== '' ? text : undefined
}

/**
 * Shows the turn that just completed to the layers that watch turns (`stuckLoop({ convergence })`), as
 * shallot's `createAgent` does after each turn with tool calls: asked before the next model call, when every
 * call of the conversation's last reply has settled. The turn is that reply's text and its calls in the
 * model's order, with their results; calls that did not go through the stack (an interrupt, another
 * middleware answering) are left out. A `LoopError` from a layer is thrown (the run ends); anything else
 * a layer throws is logged by the stack and the run goes on.
 */
export function observeCompletedTurn(stack: Stack, run: RunContext, ledger: TurnLedger, messages: readonly BaseMessage[]): void {
  if (ledger.settled.size === 0) return
  const settled = new Map(ledger.settled)
  ledger.settled.clear()
  if (stack.observeTurn === undefined) return
  let reply: AIMessage | undefined
  for (let i = messages.length - 1; i >= 0 && reply === undefined; i--) {
    const message = messages[i]
    if (AIMessage.isInstance(message) && (message.tool_calls?.length ?? 0) > 0) reply = message
  }
  if (reply === undefined) return
  const calls: ToolCall[] = []
  const results: ToolResult[] = []
  for (const toolCall of reply.tool_calls ?? []) {
    const done = settled.get(toolCall.id ?? '')
    if (done === undefined) continue
    calls.push(done.call)
    results.push(done.result)
  }
  if (calls.length === 0) return
  ledger.turns++
  stack.observeTurn({ turn: ledger.turns, text: textOf(reply), calls, results }, run)
}
