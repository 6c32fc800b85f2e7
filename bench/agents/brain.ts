/**
 * The one model brain every contender talks to: a deterministic function from the conversation so
 * far to the next assistant message. It behaves like a typical model: it reads the last tool
 * results, repeats a call that looks failed up to twice, tries the alternative tool where the task
 * has one, else answers that it failed. It reads errors generically (an `error` key, `ok: false`,
 * the wire's error flag, or failure words in the text), never a field only shallot sends.
 */
import type { Conversation, Exchange } from './conversation.js'
import type { Task } from './tasks.js'

export type BrainTurn =
  | { readonly kind: 'call'; readonly id: string; readonly name: string; readonly args: Record<string, unknown> }
  | { readonly kind: 'answer'; readonly text: string }

/** Calls of one tool per step, the first included: the original and two repeats. */
const ATTEMPTS_PER_TOOL = 3

const FAILURE_WORDS =
  /\b(error|errors|fail|failed|failure|timed? ?out|timeout|unavailable|too many requests|refused|denied|exception|invalid|not valid|ECONN\w*|ETIMEDOUT|abort(ed)?|could not|cannot|unknown)\b/i

/** Whether a tool result reads as a failure to a model that has never heard of the framework. */
export function looksFailed(exchange: Exchange): boolean {
  if (exchange.result === undefined || exchange.isError === true) return true
  try {
    const value: unknown = JSON.parse(exchange.result)
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const record = value as Record<string, unknown>
      return 'error' in record || 'errors' in record || record.ok === false
    }
  } catch {
    // not JSON: read the words
  }
  return FAILURE_WORDS.test(exchange.result)
}

export const DONE = 'DONE:'
export const FAILED = 'FAILED:'

export function think(task: Task, conversation: Conversation): BrainTurn {
  const { exchanges } = conversation
  for (const step of task.plan) {
    const tried = exchanges.filter((exchange) => step.tools.includes(exchange.name))
    if (tried.some((exchange) => !looksFailed(exchange))) continue
    for (const name of step.tools) {
      if (tried.filter((exchange) => exchange.name === name).length < ATTEMPTS_PER_TOOL)
        return { kind: 'call', id: `call_${exchanges.length + 1}`, name, args: step.args }
    }
    return { kind: 'answer', text: `${FAILED} I could not complete the task: ${step.tools.join(' / ')} kept failing.` }
  }
  return { kind: 'answer', text: `${DONE} ${task.id} completed.` }
}
