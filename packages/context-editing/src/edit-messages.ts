import type { Message, ToolCall } from '@shallot/core'

type UserMessage = Extract<Message, { role: 'user' }>
type AssistantMessage = Extract<Message, { role: 'assistant' }>
type ToolMessage = Extract<Message, { role: 'tool' }>

/**
 * One piece of a conversation that is kept or dropped whole: a user message, or an assistant message
 * with the results of its tool calls. A tool call and its result are never in different units.
 */
type Unit =
  | { readonly kind: 'user'; readonly message: UserMessage }
  | { readonly kind: 'assistant'; readonly message: AssistantMessage; readonly results: readonly ToolMessage[] }

/** How the conversation was split into units, and what could not be placed in one (counted, then left out). */
interface Units {
  readonly units: Unit[]
  /** Tool results with no call right before them, duplicates, calls with no result, and messages of no known role. */
  readonly unpaired: number
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** The calls of an assistant message that have a result in `block`, in call order, each id once. */
function pairedCalls(calls: readonly ToolCall[], block: ReadonlyMap<string, ToolMessage>): ToolCall[] {
  const seen = new Set<string>()
  const kept: ToolCall[] = []
  for (const call of calls) {
    if (!isObject(call) || typeof call.id !== 'string' || seen.has(call.id) || !block.has(call.id)) continue
    seen.add(call.id)
    kept.push(call)
  }
  return kept
}

/**
 * The assistant message at `messages[start]` with the tool results right after it. A result belongs
 * to it when its `callId` is one of its calls' ids; a result for no call of it, a second result for a
 * call, and a call with no result are unpaired: a provider refuses every one of them (OpenAI: "messages
 * with role 'tool' must be a response to a preceding message with 'tool_calls'"; Anthropic: "tool_use ids
 * were found without tool_result blocks").
 */
function assistantUnit(messages: readonly Message[], start: number): { unit: Unit | undefined; next: number; unpaired: number } {
  const message = messages[start] as AssistantMessage
  const calls = Array.isArray(message.toolCalls) ? message.toolCalls : []
  const ids = new Set(calls.flatMap((c) => (isObject(c) && typeof c.id === 'string' ? [c.id] : [])))
  const block = new Map<string, ToolMessage>()
  let unpaired = 0
  let next = start + 1
  for (; next < messages.length; next++) {
    const result = messages[next]
    if (!isObject(result) || result.role !== 'tool') break
    if (typeof result.callId === 'string' && ids.has(result.callId) && !block.has(result.callId)) block.set(result.callId, result)
    else unpaired++
  }
  const kept = pairedCalls(calls, block)
  unpaired += calls.length - kept.length
  const results = kept.map((call) => block.get(call.id) as ToolMessage)
  if (kept.length === calls.length) return { unit: { kind: 'assistant', message, results }, next, unpaired }
  // Calls left without a result go; an assistant message left with nothing to say goes with them.
  if (kept.length === 0 && (typeof message.content !== 'string' || message.content === '')) return { unit: undefined, next, unpaired }
  return { unit: { kind: 'assistant', message: { ...message, toolCalls: kept }, results }, next, unpaired }
}

/** Splits a conversation into units (see {@link Unit}); whatever cannot be paired is counted and left out. */
export function unitsOf(messages: readonly Message[]): Units {
  const units: Unit[] = []
  let unpaired = 0
  for (let i = 0; i < messages.length; ) {
    const message = messages[i]
    if (isObject(message) && message.role === 'assistant') {
      const made = assistantUnit(messages, i)
      if (made.unit !== undefined) units.push(made.unit)
      unpaired += made.unpaired
      i = made.next
      continue
    }
    if (isObject(message) && message.role === 'user') units.push({ kind: 'user', message })
    else unpaired++ // an orphaned tool result, or a message of no known role
    i++
  }
  return { units, unpaired }
}

function flatten(units: readonly Unit[]): Message[] {
  const messages: Message[] = []
  for (const unit of units) {
    messages.push(unit.message)
    if (unit.kind === 'assistant') messages.push(...unit.results)
  }
  return messages
}

/** What an edit did, in counts (never content): for the event, the log and the run's error. */
export interface EditCounts {
  /** Tool results whose content was replaced by the placeholder. */
  readonly clearedToolResults: number
  /** Whole messages left out (`keepLast`), tool calls and results among them. */
  readonly droppedMessages: number
  /** Messages or tool calls left out because they had no partner: an orphaned result, a call with no result. */
  readonly unpaired: number
}

export interface Edited extends EditCounts {
  readonly messages: Message[]
}

/** The edit's settings, parsed. */
export interface EditSettings {
  /** Tool results kept intact (`clearToolResults`), or units kept after the first user message (`keepLast`). */
  readonly keep: number
  readonly placeholder: string
  /** Tools whose results `clearToolResults` never clears. */
  readonly excludeTools: ReadonlySet<string>
}

/**
 * `clearToolResults`: every tool result but the last `keep` gets `placeholder` as its content, unless
 * its tool is in `excludeTools` or it already says the placeholder. Calls and results stay paired, in
 * place; only their text changes. LangChain's `ClearToolUsesEdit` and Anthropic's `clear_tool_uses`.
 */
export function clearToolResults(messages: readonly Message[], settings: EditSettings): Edited {
  const { units, unpaired } = unitsOf(messages)
  const results = units.flatMap((u) => (u.kind === 'assistant' ? u.results : []))
  const older = new Set(results.slice(0, Math.max(0, results.length - settings.keep)))
  let cleared = 0
  const edited = units.map((unit): Unit => {
    if (unit.kind !== 'assistant' || !unit.results.some((r) => older.has(r))) return unit
    const replaced = unit.results.map((result) => {
      if (!older.has(result) || settings.excludeTools.has(result.name) || result.content === settings.placeholder) return result
      cleared++
      return { ...result, content: settings.placeholder }
    })
    return { ...unit, results: replaced }
  })
  return { messages: flatten(edited), clearedToolResults: cleared, droppedMessages: 0, unpaired }
}

/**
 * `keepLast`: the first user message (the task), then the last `keep` units after it, each an
 * assistant message with all its results or a user message, so no call is cut from its result.
 */
export function keepLast(messages: readonly Message[], settings: EditSettings): Edited {
  const { units, unpaired } = unitsOf(messages)
  const first = units.findIndex((u) => u.kind === 'user')
  const head = first === -1 ? [] : [units[first] as Unit]
  const rest = units.slice(first + 1)
  const kept = [...head, ...rest.slice(Math.max(0, rest.length - settings.keep))]
  const out = flatten(kept)
  return { messages: out, clearedToolResults: 0, droppedMessages: flatten(units).length - out.length, unpaired }
}

/**
 * What is wrong with a conversation as a provider reads it: each problem names the message index.
 * Empty when every tool result follows the assistant message that called it (in the block of results
 * right after it, once per call) and every tool call has its result there. The layer's own output is
 * always empty here; use it in tests of your own adapters and edits.
 *
 * @example
 * pairingProblems([{ role: 'tool', callId: 'c1', name: 'read', content: 'x', ok: true }])
 * // ['messages[0]: tool result c1 has no tool call right before it']
 */
export function pairingProblems(messages: readonly Message[]): string[] {
  const problems: string[] = []
  // The calls of the assistant message whose block of results is being read, and whether each was answered.
  let open = new Map<string, boolean>()
  let openAt = -1
  const closeBlock = () => {
    for (const [id, answered] of open) if (!answered) problems.push(`messages[${openAt}]: tool call ${id} has no result`)
    open = new Map()
  }
  for (const [index, message] of messages.entries()) {
    if (!isObject(message)) {
      problems.push(`messages[${index}]: not a message`)
    } else if (message.role === 'tool') {
      const id = String(message.callId)
      if (!open.has(id)) problems.push(`messages[${index}]: tool result ${id} has no tool call right before it`)
      else if (open.get(id) === true) problems.push(`messages[${index}]: a second result for tool call ${id}`)
      else open.set(id, true)
      continue
    }
    closeBlock()
    if (!isObject(message) || message.role !== 'assistant' || !Array.isArray(message.toolCalls)) continue
    openAt = index
    for (const call of message.toolCalls) {
      if (open.has(call.id)) problems.push(`messages[${index}]: tool call id ${call.id} appears twice`)
      open.set(call.id, false)
    }
  }
  closeBlock()
  return problems
}
