import type { RunOutcome } from '@shallot/core'
import { escapeControls } from '@shallot/core/kit'

/**
 * The `--report` file: for a stopped run, core's failure report (task, completed calls, what failed,
 * why, next steps, the calls waiting for approval) and the command that resumes it (with the other
 * ways to answer them); for a completed one, the answer and the spend.
 *
 * @example
 * await writeFile('report.md', runReportText(outcome, 'shallot resume run-1 --checkpoints run.db --model openai:gpt-4o-mini'))
 */
export function runReportText(outcome: RunOutcome, resume: string | undefined, otherAnswers?: string): string {
  // A report is read with cat and less too: what the task, the model or a tool said is shown, never obeyed.
  return escapeControls(reportText(outcome, resume, otherAnswers))
}

function reportText(outcome: RunOutcome, resume: string | undefined, otherAnswers?: string): string {
  const task = outcome.transcript.find((m) => m.role === 'user')?.content ?? ''
  const spent = `${outcome.turns} turn${outcome.turns === 1 ? '' : 's'}, ${outcome.steps} step${outcome.steps === 1 ? '' : 's'}`
  if (outcome.status === 'completed') {
    return `# Run ${outcome.runId}: completed\n\nTask: ${task}\n\n${spent}.\n\n## Answer\n\n${outcome.output}\n`
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
