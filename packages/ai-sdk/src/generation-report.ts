import { buildReport, type RunReport, type TurnRecord } from '@shallot/agent'
import type { LoopError } from '@shallot/core'

const AGAIN = 'generate again with the conversation so far'

/**
 * The report of a stopped AI SDK generation, in `createAgent`'s words: the task, the completed steps and their
 * calls, what failed, why and what to do next. A generation is not resumed by id: where the agent's report says
 * `agent.resume(…)`, this one says to generate again.
 */
export function generationReport(runId: string, task: string, turns: readonly TurnRecord[], error: LoopError): RunReport {
  const report = buildReport(runId, task, turns, error)
  const { resume } = report
  if (resume === undefined) return report
  const swap = (text: string) => text.replaceAll(`resume it with ${resume}`, AGAIN)
  return { ...report, resume: undefined, nextSteps: swap(report.nextSteps), text: swap(report.text) }
}
