import type { RunSnapshot } from '@shallot/agent'
import { resetConvergence, resetStuckLoop } from 'shallot'
import { UsageError } from '../usage.js'

/** The longest note taken from the command line: guidance, not a second task. */
export const MAX_NOTE_CHARS = 10_000

/**
 * `shallot resume RUN_ID --note "…"`: the checkpoint a person's note resumes. The note joins the
 * transcript as a user message, read by the model before its next turn. And the repeats stuck-loop
 * counted are forgotten, every call's and the near-identical replies', because the person changed
 * something the counts were about: a created file can change what `read_file` and `list_files`
 * answer alike, and which calls a change reaches only the person knows. Forgetting costs at most the
 * thresholds again: a call that still fails the same way is refused, then the run stops, as before.
 *
 * A run waiting for approval or parked has a turn to finish first (its calls replay, no model call
 * comes between), so it takes no note: a `UsageError` says what to do instead.
 *
 * @example
 * await checkpoints.save(withNote(await checkpoints.load('run-1'), 'I created logs/build.log; read it now'))
 */
export function withNote(snapshot: RunSnapshot, note: string): RunSnapshot {
  const { runId } = snapshot
  if (snapshot.status === 'completed') throw new UsageError(`run "${runId}" completed; a note has no turn to go to`)
  if (snapshot.pendingTurn !== undefined)
    throw new UsageError(
      snapshot.status === 'parked'
        ? `run "${runId}" is parked: its waiting calls run again first; resume it without --note, and add the note if it stops`
        : `run "${runId}" waits for answers to its calls: give --approve, --deny or --edit without --note, and add the note if it stops again`,
    )
  const state = structuredClone(snapshot.state)
  resetStuckLoop(state)
  resetConvergence(state)
  return { ...snapshot, state, transcript: [...snapshot.transcript, { role: 'user', content: note }] }
}

/** `--note` as given: on `resume` only, not blank, at most {@link MAX_NOTE_CHARS}. */
export function noteOf(mode: 'run' | 'resume', note: string | undefined): string | undefined {
  if (note === undefined) return undefined
  if (mode === 'run')
    throw new UsageError('--note adds guidance to a stopped run: give it to shallot resume <runId>; a new run takes it in its task')
  if (note.trim() === '') throw new UsageError('--note is empty; say what you changed or what the model should do instead')
  if (note.length > MAX_NOTE_CHARS)
    throw new UsageError(`--note is ${note.length} characters; the most is ${MAX_NOTE_CHARS}: put long instructions in a file and name it`)
  return note
}

/** Whether a stop is stuck-loop's (a repeated call, near-identical replies): resuming it as it is stops it again. */
export function isLoopStop(outcome: { status: string; error?: { kind: string; details: Record<string, unknown> } }): boolean {
  if (outcome.status !== 'stopped' || outcome.error === undefined) return false
  return outcome.error.kind === 'loop_detected' || outcome.error.details.reason === 'converged'
}
