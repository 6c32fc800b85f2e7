import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import type { ParkingOutcome } from '@shallot/agent'
import type { CliIO } from '../cli-io.js'
import { writeOut, writeRunFiles } from '../report/command.js'
import type { recordRun } from '../report/record-run.js'
import { approvalHint } from './approval-flags.js'
import { neverConnected } from './cli-next-steps.js'
import { handoffOf } from './handoff.js'
import type { resolveModel } from './model-spec.js'
import { EXIT_PARKED } from './park.js'
import { isLoopStop } from './resume-note.js'
import type { Values } from './run-args.js'
import { runReportText } from './run-report.js'
import { shellQuote as quote } from './shell-quote.js'

/**
 * The handoff file of a run, `<runId>.handoff.md` beside the checkpoints file: written for a stopped
 * run, removed once the run completes (it would describe a stop that is over).
 */
async function writeHandoff(
  checkpoints: string,
  outcome: ParkingOutcome,
  resume: string | undefined,
  otherAnswers: string | undefined,
  secrets: readonly string[],
): Promise<{ file: string; wrote: boolean; removed: boolean }> {
  const file = join(dirname(resolve(checkpoints)), `${outcome.runId}.handoff.md`)
  if (outcome.status === 'completed') {
    const removed = existsSync(file)
    if (removed) await rm(file, { force: true })
    return { file, wrote: false, removed }
  }
  // A run that cannot go on (its context is full) names no command: core's report says to start a new one.
  const command =
    (outcome.status === 'stopped' && outcome.report.resume === undefined) || resume === undefined
      ? undefined
      : `${resume}${otherAnswers === undefined ? '' : `\n# or: ${otherAnswers}`}`
  await writeOut(file, handoffOf(outcome, { ...(command === undefined ? {} : { resumeCommand: command }), secrets: [...secrets] }))
  return { file, wrote: true, removed: false }
}

/** The calls a stopped run waits on a person for (none for any other stop). */
export function pendingOf(outcome: ParkingOutcome) {
  return outcome.status === 'stopped' && outcome.error.kind === 'user_input_required' ? outcome.report.pending : []
}

/**
 * The command line that continues this run, with the same model, config and servers (and the approvals it
 * waits for); after a loop stop, with a `--note` to fill in, as resuming it unchanged stops it again.
 */
export function resumeLine(runId: string, values: Values, model: string, outcome: ParkingOutcome, command: string): string {
  const parts = [command, 'resume', quote(runId), '--checkpoints', quote(values.checkpoints as string), '--model', quote(model)]
  if (values.config !== undefined) parts.push('--config', quote(values.config))
  for (const line of values.mcp ?? []) parts.push('--mcp', quote(line))
  if (values['mcp-env'] !== undefined) parts.push('--mcp-env', quote(values['mcp-env']))
  if (values['park-after'] !== undefined) parts.push('--park-after', quote(values['park-after']))
  if (values.stream === true) parts.push('--stream')
  const pending = pendingOf(outcome)
  if (pending.length > 0) parts.push(approvalHint(pending, quote).approveAll)
  if (isLoopStop(outcome)) parts.push('--note', quote(NOTE_PLACEHOLDER))
  return parts.join(' ')
}

/** What the printed resume command of a loop stop puts after `--note`, for the person to replace. */
export const NOTE_PLACEHOLDER = '<what you changed>'

/** What `leaveRun` needs besides the outcome. */
export interface Leaving {
  /** The outcome as the command line tells it (`withCliNextSteps`). */
  readonly told: ParkingOutcome
  readonly resume: string | undefined
  readonly values: Values
  readonly resolved: ReturnType<typeof resolveModel>
  readonly recorder: ReturnType<typeof recordRun>
  readonly io: CliIO
}

/**
 * What a finished `run`/`resume` leaves behind: the resume line (and the other answers to pending
 * approvals), the handoff file, the report and the run files; resolves to the exit code (0
 * completed, 75 parked, 1 for any stop: a model never reached too, as its report says what to fix and its checkpoint resumes).
 */
export async function leaveRun(outcome: ParkingOutcome, { told, resume, values, resolved, recorder, io }: Leaving): Promise<number> {
  const pending = pendingOf(outcome)
  if (outcome.status === 'stopped')
    io.out(resume === undefined ? '  (run with --checkpoints run.db to be able to resume a stopped run)' : `  resume: ${resume}`)
  const otherAnswers = resume === undefined || pending.length === 0 ? undefined : approvalHint(pending, quote).others
  if (otherAnswers !== undefined) io.out(`          (${otherAnswers})`)
  const handoff =
    values.checkpoints === undefined ? undefined : await writeHandoff(values.checkpoints, told, resume, otherAnswers, resolved.secrets)
  if (handoff?.wrote === true) io.out(`  handoff for a person: ${handoff.file}`)
  if (handoff?.removed === true) io.out(`removed ${handoff.file}: the stop it described is behind this run`)
  if (values.report !== undefined) {
    const named = handoff?.wrote === true ? `\nThe handoff for a person: ${handoff.file}\n` : ''
    await writeOut(values.report, `${runReportText(told, resume, otherAnswers)}${named}`)
    io.out(`wrote the report to ${values.report}`)
  }
  const files = {
    ...(values.record !== undefined ? { record: values.record } : {}),
    ...(values.html !== undefined ? { html: values.html } : {}),
  }
  await writeRunFiles(recorder.finish(told), files, io.out)
  if (outcome.status === 'completed') return 0
  if (outcome.status === 'parked') return EXIT_PARKED
  const unreached = neverConnected(outcome)
  // The report above says it too; on stderr it is seen when stdout goes to a file.
  if (unreached !== undefined) io.err(`shallot: cannot reach the model at ${resolved.endpoint} (${unreached}); check ${resolved.urlVar}`)
  return 1
}
