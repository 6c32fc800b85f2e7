import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import type { ApprovalAnswer, Clock } from '@shallot/core'
import { UsageError } from '../usage.js'
import { approvalsOfFlags } from './approval-flags.js'
import { RUN_FLAGS } from './flags.js'
import { type CliPark, parkOf } from './park.js'
import { noteOf } from './resume-note.js'

/** The longest task taken from the command line; longer instructions belong in a file the agent reads. */
export const MAX_TASK_CHARS = 100_000
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

/** The flags of `run` and `resume`, as parseArgs reads them. */
export type Values = ReturnType<
  typeof parseArgs<{ args: string[]; options: typeof RUN_FLAGS; allowPositionals: true; strict: true }>
>['values']

/** What `run` or `resume` was asked to do, every flag checked. */
export interface RunArgs {
  readonly values: Values
  /** The task (`run`) or the run id (`resume`), as typed. */
  readonly given: string
  readonly runId: string
  /** `--approve`, `--deny` and `--edit`: answers to a stopped run's pending calls. */
  readonly flagged: Record<string, ApprovalAnswer> | undefined
  readonly limits: { maxTurns?: number; maxSteps?: number }
  readonly park: CliPark | undefined
  /** `--note`: a person's guidance for the model, added to a resumed run (`withNote`). */
  readonly note: string | undefined
  /** The command line to show in a usage error. */
  readonly example: string
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1)
    throw new UsageError(`--${flag} must be a whole number from 1, not "${value.slice(0, 40)}"`)
  return Number(value)
}

/**
 * Reads and checks the arguments of `shallot run` or `shallot resume`: a `UsageError` naming the fix
 * for anything wrong, before a file is opened or a server started.
 *
 * @example
 * readRunArgs('run', ['--model', 'openai:gpt-4o-mini', 'summarise README.md'], undefined).runId // 'run-3f2a9c1b'
 */
export function readRunArgs(mode: 'run' | 'resume', args: readonly string[], clock: Clock | undefined): RunArgs {
  const { values, positionals } = parseArgs({ args: [...args], options: RUN_FLAGS, allowPositionals: true, strict: true })
  const example =
    mode === 'run'
      ? 'shallot run --model openai:gpt-4o-mini "<task>"'
      : 'shallot resume <runId> --checkpoints run.db --model openai:gpt-4o-mini'
  if (positionals.length === 0 || positionals[0]?.trim() === '')
    throw new UsageError(mode === 'run' ? `run needs a task: ${example}` : `resume needs the run id: ${example}`)
  if (positionals.length > 1)
    throw new UsageError(
      `${mode} takes one ${mode === 'run' ? 'task (quote it)' : 'run id'}; got ${positionals.length} arguments: ${example}`,
    )
  const given = positionals[0] as string
  if (mode === 'run' && given.length > MAX_TASK_CHARS)
    throw new UsageError(
      `the task is ${given.length} characters; the most is ${MAX_TASK_CHARS}: put long instructions in a file and ask the agent to read it`,
    )
  const flagged = approvalsOfFlags(values)
  if (mode === 'run' && flagged !== undefined)
    throw new UsageError('--approve, --deny and --edit answer a stopped run: give them to shallot resume <runId>')
  if (mode === 'resume' && values['run-id'] !== undefined) throw new UsageError('resume takes the run id as its argument, not --run-id')
  if (mode === 'resume' && values.checkpoints === undefined)
    throw new UsageError(`resume needs the checkpoints file the run wrote: ${example}`)
  const runId = mode === 'resume' ? given : (values['run-id'] ?? `run-${randomUUID().slice(0, 8)}`)
  if (!RUN_ID.test(runId))
    throw new UsageError(`the run id "${runId.slice(0, 60)}" must be letters, digits, "_", "-" and "." (at most 128)`)
  const maxTurns = positiveInt(values['max-turns'], 'max-turns')
  const maxSteps = positiveInt(values['max-steps'], 'max-steps')
  const park = parkOf(values['park-after'], values.checkpoints, clock)
  const note = noteOf(mode, values.note)
  const limits = { ...(maxTurns === undefined ? {} : { maxTurns }), ...(maxSteps === undefined ? {} : { maxSteps }) }
  return { values, given, runId, flagged, limits, park, note, example }
}
