import type { RunContext, Stack, ToolCall, ToolResult } from '@shallot/core'

/** A tool call of the current turn that went through the stack, with what it ended as. */
export interface SettledCall {
  readonly call: ToolCall
  readonly result: ToolResult
}

/** What a `shallotFunctionTools()` set remembers between the SDK's turns: the turns shown, the current turn's settled calls. */
export interface TurnLedger {
  turns: number
  readonly settled: Map<string, SettledCall>
}

export const newTurnLedger = (): TurnLedger => ({ turns: 0, settled: new Map() })

type Item = Record<string, unknown>
const isItem = (value: unknown): value is Item => typeof value === 'object' && value !== null

/** The text of the assistant's message items: `output_text` parts, joined. */
function messageText(item: Item): string {
  const content = item.content
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => (isItem(part) && part.type === 'output_text' && typeof part.text === 'string' ? part.text : ''))
    .join('')
}

/**
 * The model's last reply in the input the SDK is about to send: the `function_call` and assistant `message` items
 * before the trailing `function_call_result` items. Its text, and its call ids in the model's order.
 */
function lastReply(input: readonly unknown[]): { text: string; callIds: string[] } {
  let end = input.length
  while (end > 0 && isItem(input[end - 1]) && (input[end - 1] as Item).type === 'function_call_result') end--
  let start = end
  while (start > 0) {
    const item = input[start - 1]
    if (!isItem(item) || !(item.type === 'function_call' || (item.type === 'message' && item.role === 'assistant'))) break
    start--
  }
  const callIds: string[] = []
  let text = ''
  for (const item of input.slice(start, end) as Item[]) {
    if (item.type === 'function_call' && typeof item.callId === 'string') callIds.push(item.callId)
    else text += messageText(item)
  }
  return { text, callIds }
}

/**
 * Shows the turn that just completed to the layers that watch turns (`stuckLoop({ convergence })`), as shallot's
 * `createAgent` does after each turn with tool calls: asked from `callModelInputFilter`, which the SDK calls before
 * every model call, once the previous turn's calls have all run. The turn is the model's last reply (its text, its
 * calls in order) with the results of the calls that went through the stack. A `LoopError` from a layer is thrown;
 * anything else a layer throws is logged by the stack and the run goes on.
 */
export function observeCompletedTurn(stack: Stack, run: RunContext, ledger: TurnLedger, input: unknown): void {
  if (ledger.settled.size === 0) return
  const settled = new Map(ledger.settled)
  ledger.settled.clear()
  if (stack.observeTurn === undefined || !Array.isArray(input)) return
  const reply = lastReply(input)
  const calls: ToolCall[] = []
  const results: ToolResult[] = []
  for (const id of reply.callIds) {
    const done = settled.get(id)
    if (done === undefined) continue
    calls.push(done.call)
    results.push(done.result)
  }
  if (calls.length === 0) return
  ledger.turns++
  stack.observeTurn({ turn: ledger.turns, text: reply.text === '' ? undefined : reply.text, calls, results }, run)
}
