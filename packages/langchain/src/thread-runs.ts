import { createRun, type MutableRun } from '@shallot/core'
import type { ToolCallRequest } from 'langchain'
import { newTurnLedger, type TurnLedger } from './observe-turns.js'

/** Per thread: its run, the argument text of its last model turn's malformed calls by call id, and its turns. */
export type ThreadRun = { run: MutableRun; stop: AbortController; malformed: Map<string, string>; ledger: TurnLedger }
export type ThreadRuns = Map<string, ThreadRun>

/** The run a call belongs to by default: its LangGraph thread, else its conversation (the id of the first message). */
export function defaultRunKey(request: ToolCallRequest): string {
  const thread = request.runtime.configurable?.thread_id
  if (typeof thread === 'string' && thread !== '') return thread
  const first = request.state.messages[0]?.id
  return typeof first === 'string' && first !== '' ? first : 'default'
}

/** The thread's run (made on first use), now the most recently used; past `maxRuns`, the least recently used is forgotten. */
export function threadRun(runs: ThreadRuns, key: string, maxSteps: number | undefined, maxRuns: number): ThreadRun {
  let entry = runs.get(key)
  if (entry !== undefined) {
    runs.delete(key)
  } else {
    const stop = new AbortController()
    const run = createRun({ id: key, signal: stop.signal, ...(maxSteps === undefined ? {} : { maxSteps }) })
    entry = { run, stop, malformed: new Map<string, string>(), ledger: newTurnLedger() }
    if (runs.size >= maxRuns) runs.delete(runs.keys().next().value as string)
  }
  runs.set(key, entry)
  return entry
}
