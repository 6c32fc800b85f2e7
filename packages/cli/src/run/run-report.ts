import type { ParkingOutcome } from '@shallot/agent'
import { escapeControls } from '@shallot/core/kit'
import { waiterOf } from './park.js'

/**
 * The `--report` file: for a stopped run, core's failure report (task, completed calls, what failed,
 * why, next steps, the calls waiting for approval) and the command that resumes it (with the other
 * ways to answer them); for a completed one, the answer and the spend.
 *
 * @example
 * await writeFile('report.md', runReportText(outcome, 'shallot resume run-1 --checkpoints run.db --model openai:gpt-4o-mini'))
 */
export function runReportText(outcome: ParkingOutcome, resume: string | undefined, otherAnswers?: string): string {
  // A report is read with cat and less too: what the task, the model or a tool said is shown, never obeyed.
  return escapeControls(reportText(outcome, resume, otherAnswers))
}

function reportText(outcome: ParkingOutcome, resume: string | undefined, otherAnswers?: string): string {
  const task = outcome.transcript.find((m) => m.role === 'user')?.content ?? ''
  const spent = `${outcome.turns} turn${outcome.turns === 1 ? '' : 's'}, ${outcome.steps} step${outcome.steps === 1 ? '' : 's'}`
  if (outcome.status === 'completed') {
    return `# Run ${outcome.runId}: completed\n\nTask: ${task}\n\n${spent}.\n\n## Answer\n\n${outcome.output}\n`
  }
  if (outcome.status === 'parked') {
    const at = new Date(outcome.wakeAt).toISOString()
    const { reason } = outcome
    const byModel = 'model' in reason
    const again = byModel ? 'may be asked again after' : 'may be called again after'
    const then = byModel
      ? 'the turns that completed are kept, and the model is asked again'
      : 'the calls of the parked turn that completed are kept, the waiting one runs again'
    return `# Run ${outcome.runId}: parked until ${at}\n\nTask: ${task}\n\n${spent}.\n\n${waiterOf(reason)} answered ${reason.code} and ${again} ${Math.ceil(reason.waitMs / 1000)} s. Nothing runs until the run is resumed; ${then}.\n\nResume it at or after ${at}:\n\n    ${resume ?? '(no command: the run has no checkpoints file)'}\n`
  }
  const how =
    resume === undefined
      ? 'The run had no --checkpoints file, so it cannot be resumed; run it again with --checkpoints run.db.'
      : `Resume it from the command line:\n\n    ${resume}${otherAnswers === undefined ? '' : `\n\n(${otherAnswers})`}`
  return `# Run ${outcome.runId}: stopped (${outcome.error.kind})\n\n${spent}.\n\n${outcome.report.text
    .split('\n')
    .map((l) => (l === '' ? '' : `    ${l}`))
    .join('\n')}\n\n${how}\n`
}
