import type { PendingCall } from '@shallot/agent'
import type { ApprovalAnswer, Json } from '@shallot/core'
import type { LineReader } from './line-reader.js'

/** Wrong answers to one question before it counts as a no. */
export const MAX_TRIES = 3
/** The longest line read at the prompt; edited arguments longer than this belong in `--edit` or a file. */
export const MAX_ANSWER_CHARS = 100_000

type Asked = { readonly line: string } | { readonly denied: string }

/** Asks until `accept` takes a line; a line too long, a wrong answer `MAX_TRIES` times, or the end of input is a no. */
async function ask(
  reader: LineReader,
  print: (line: string) => void,
  question: string,
  accept: (line: string) => string | undefined,
): Promise<Asked> {
  for (let tries = 1; ; tries++) {
    print(question)
    const read = await reader.next()
    if ('end' in read) return { denied: 'no answer (end of input)' }
    const problem = 'tooLong' in read ? `that line is ${read.tooLong} characters; the most is ${MAX_ANSWER_CHARS}` : accept(read.line)
    if (problem === undefined && 'line' in read) return { line: read.line }
    if (tries >= MAX_TRIES) return { denied: `no usable answer after ${MAX_TRIES} tries (${problem})` }
    print(`  ${problem}`)
  }
}

const YES = new Set(['y', 'yes'])
const NO = new Set(['n', 'no'])
const EDIT = new Set(['e', 'edit'])

function jsonProblem(line: string): string | undefined {
  try {
    JSON.parse(line)
    return undefined
  } catch (err) {
    return `that is not JSON (${err instanceof Error ? err.message.slice(0, 120) : 'unreadable'}); type the arguments on one line, e.g. {"path":"notes.txt"}`
  }
}

/**
 * Asks at the terminal about each pending call: `y` runs it, `n` refuses it, `e` runs it with
 * arguments typed as JSON (validated by the tool's schema like any call; a line that is not JSON
 * is asked again). No answer (the end of input), or no usable one after a few tries, is a no, and
 * the prompt says so. Resolves to the answers by call id for `agent.resume(runId, { approvals })`.
 *
 * @example
 * const approvals = await askApprovals(outcome.report.pending, lineReader(process.stdin, MAX_ANSWER_CHARS), console.log)
 */
export async function askApprovals(
  pending: readonly PendingCall[],
  reader: LineReader,
  print: (line: string) => void,
): Promise<Record<string, ApprovalAnswer>> {
  const answers: Record<string, ApprovalAnswer> = {}
  // A call id is the model's text: `__proto__` must be a key like any other.
  const put = (callId: string, answer: ApprovalAnswer) =>
    Object.defineProperty(answers, callId, { value: answer, enumerable: true, writable: true, configurable: true })
  for (const call of pending) {
    print('')
    print(`approval needed: ${call.callId}: ${call.tool} ${call.arguments}${call.reason === '' ? '' : ` (${call.reason})`}`)
    const choice = await ask(reader, print, `  run it? [y]es / [n]o / [e]dit the arguments:`, (line) => {
      const word = line.trim().toLowerCase()
      return YES.has(word) || NO.has(word) || EDIT.has(word) ? undefined : 'answer y, n or e'
    })
    if ('denied' in choice) {
      print(`  ${choice.denied}: ${call.callId} is denied`)
      put(call.callId, { deny: `${choice.denied} at the terminal` })
      continue
    }
    const word = choice.line.trim().toLowerCase()
    if (YES.has(word)) {
      put(call.callId, 'approve')
      print(`  ${call.callId} approved`)
      continue
    }
    if (NO.has(word)) {
      put(call.callId, { deny: 'denied at the terminal' })
      print(`  ${call.callId} denied`)
      continue
    }
    const edited = await ask(reader, print, `  the arguments as JSON on one line (now ${call.arguments}):`, jsonProblem)
    if ('denied' in edited) {
      print(`  ${edited.denied}: ${call.callId} is denied`)
      put(call.callId, { deny: `${edited.denied} at the terminal` })
      continue
    }
    put(call.callId, { args: JSON.parse(edited.line) as Json })
    print(`  ${call.callId} approved with the edited arguments`)
  }
  return answers
}
