import { type Json, LoopError, type Message, type ToolCall, type ToolErrorJSON } from '@shallot/core'
import type { RunUsage } from './usage-budget.js'

/** One tool call of a completed turn, as the report tells it. */
export interface CallRecord {
  readonly id: string
  readonly name: string
  readonly ok: boolean
  readonly code?: string
  readonly attempts: number
  readonly replayed: boolean
}

export interface TurnRecord {
  readonly turn: number
  readonly text?: string
  readonly calls: readonly CallRecord[]
}

/** A call of a stopped turn that settled before the stop: what the transcript and the report need. */
export interface SettledCall {
  readonly callId: string
  readonly name: string
  readonly ok: boolean
  readonly content: string
  readonly attempts: number
  readonly replayed: boolean
  readonly error?: ToolErrorJSON
}

/** The turn that stopped for a human: the model's response as it came, and what already settled. */
export interface PendingTurn {
  readonly turn: number
  readonly response: { readonly text?: string; readonly toolCalls: readonly ToolCall[] }
  /** By call id; these calls are not dispatched again on replay. */
  readonly results: Readonly<Record<string, SettledCall>>
  /** The stop's `details.pending`, for the report and `agent.resume(runId, { approvals })`. */
  readonly pending: readonly Json[]
}

/**
 * Why a run parked: the error of the call that must wait before it can be tried again, a tool call's
 * (`tool`, `callId`: it runs again on wake) or the model call's (`model`: the model is asked again on wake).
 * `code` is the error's, e.g. `rate_limited` (a long `Retry-After`) or `circuit_open` (a cooldown); `waitMs`
 * how long it said to wait.
 */
export type ParkReason =
  | { readonly code: string; readonly tool: string; readonly callId: string; readonly waitMs: number }
  | { readonly code: string; readonly model: string; readonly waitMs: number }

/** When a parked run may continue, and why it waits. Times are wall-clock epoch ms, so any process can read them. */
export interface ParkRecord {
  readonly wakeAt: number
  readonly parkedAt: number
  readonly reason: ParkReason
}

/** Everything needed to continue a run at its next turn. Plain JSON. */
export interface RunSnapshot {
  readonly version: 1
  readonly runId: string
  readonly input: string
  /** `parked`: checkpointed to continue at `parked.wakeAt`, its waiting turn (if a tool call waits) in `pendingTurn`. */
  readonly status: 'running' | 'completed' | 'stopped' | 'parked'
  /** The last completed turn. */
  readonly turn: number
  readonly stepsUsed: number
  readonly state: Record<string, Json>
  readonly transcript: readonly Message[]
  readonly turns: readonly TurnRecord[]
  readonly output?: string
  /** Tokens and dollars spent so far, so a resumed run's budget goes on counting. Absent: none yet. */
  readonly usage?: RunUsage
  /** Set while the run waits for approvals; `turn` stays the last completed turn. Absent in older snapshots. */
  readonly pendingTurn?: PendingTurn
  /** Set while the run is parked (`status: 'parked'`). */
  readonly parked?: ParkRecord
  /**
   * `hmac-sha256:<hex>` over the rest of the snapshot, written when the agent has a `checkpointKey`
   * and checked by its `resume`: a checkpoint the store (or anyone with write access to it) changed
   * is refused. Absent without a key.
   */
  readonly integrity?: string
}

/** Where snapshots go: one per run id, replaced after every completed turn. */
export interface CheckpointStore {
  /** Names the store in errors ("checkpoints store \"postgres\" failed to save …"); optional. */
  readonly name?: string
  save(snapshot: RunSnapshot): void | Promise<void>
  load(runId: string): RunSnapshot | undefined | Promise<RunSnapshot | undefined>
  /**
   * Optional, for stores shared by several processes: takes the run for one resume, atomically.
   * Resolves to a function that gives it back, or `undefined` when another holder has it. A claim
   * whose holder died must lapse on its own (a lease), or the run could never be resumed again.
   * Without it, only resumes in this process are kept apart.
   */
  claim?(runId: string): (() => void | Promise<void>) | undefined | Promise<(() => void | Promise<void>) | undefined>
}

const RESUME_ERROR = Symbol.for('shallot.ResumeError')

/**
 * A resume refused before anything ran: the run is being resumed elsewhere (`run_in_progress`), or
 * its checkpoint holds a stopped turn that is not well-formed (`corrupt_checkpoint`).
 *
 * @example
 * await agent.resume('r1').catch((err) => {
 *   if (ResumeError.is(err) && err.code === 'run_in_progress') console.error(`run ${err.runId} is already resuming`)
 * })
 */
export class ResumeError extends Error {
  declare readonly [RESUME_ERROR]: true
  override readonly name = 'ResumeError'
  readonly code: 'run_in_progress' | 'corrupt_checkpoint'
  readonly runId: string

  constructor(code: ResumeError['code'], runId: string, message: string) {
    super(message)
    Object.defineProperty(this, RESUME_ERROR, { value: true })
    this.code = code
    this.runId = runId
  }

  /** True for a ResumeError from any installed copy of `@shallot/core`. */
  static is(value: unknown): value is ResumeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[RESUME_ERROR] === true
  }
}

/** More calls than any model sends in one turn: a checkpoint holding more was not written by a run. */
const MAX_PENDING_CALLS = 1000

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Keys of `value` other than `allowed` (own keys only: `__proto__` from JSON is one of them). */
function extraKey(value: Record<string, unknown>, allowed: readonly string[]): string | undefined {
  return Object.keys(value).find((key) => !allowed.includes(key))
}

/** What is wrong with a checkpoint's stopped turn, or undefined when it can be replayed as it is. */
function pendingTurnProblem(pendingTurn: unknown, tools: ReadonlySet<string>): string | undefined {
  if (!isRecord(pendingTurn)) return 'pendingTurn is not an object'
  const extra = extraKey(pendingTurn, ['turn', 'response', 'results', 'pending'])
  if (extra !== undefined) return `pendingTurn has an unknown field "${extra.slice(0, 40)}"`
  const { turn, response, results, pending } = pendingTurn
  if (typeof turn !== 'number' || !Number.isSafeInteger(turn) || turn < 1) return 'pendingTurn.turn is not a turn number (1 or more)'
  if (!isRecord(response)) return 'pendingTurn.response is not an object'
  const extraInResponse = extraKey(response, ['text', 'toolCalls'])
  if (extraInResponse !== undefined) return `pendingTurn.response has an unknown field "${extraInResponse.slice(0, 40)}"`
  if (response.text !== undefined && typeof response.text !== 'string') return 'pendingTurn.response.text is not a string'
  const calls = response.toolCalls
  if (!Array.isArray(calls) || calls.length === 0) return 'pendingTurn.response.toolCalls is not a list of calls'
  if (calls.length > MAX_PENDING_CALLS)
    return `pendingTurn.response.toolCalls holds ${calls.length} calls; a turn has at most ${MAX_PENDING_CALLS}`
  const names = new Map<string, string>()
  for (const [i, call] of calls.entries()) {
    if (!isRecord(call) || typeof call.id !== 'string' || call.id === '' || typeof call.name !== 'string')
      return `pendingTurn.response.toolCalls[${i}] is not a call with a string id and name`
    if (names.has(call.id)) return `pendingTurn.response.toolCalls has the call id "${call.id.slice(0, 60)}" twice`
    names.set(call.id, call.name)
  }
  if (!Array.isArray(pending) || pending.length === 0) return 'pendingTurn.pending is not a list of waiting calls'
  if (pending.length > calls.length) return `pendingTurn.pending names ${pending.length} calls; the turn has ${calls.length}`
  const waiting = new Set<string>()
  for (const [i, entry] of pending.entries()) {
    const answered = isRecord(entry) ? entry.callId : undefined
    if (typeof answered !== 'string') return `pendingTurn.pending[${i}] has no callId`
    // A call a layer made inside a call of the turn waits under that call (turnCallId), which the replay makes again.
    const callId = (entry as Record<string, unknown>).turnCallId ?? answered
    if (typeof callId !== 'string') return `pendingTurn.pending[${i}].turnCallId is not a call id`
    waiting.add(callId)
    const name = names.get(callId)
    if (name === undefined) return `pendingTurn.pending[${i}] waits for call "${callId.slice(0, 60)}", which the turn does not hold`
    if (!tools.has(name))
      return `the waiting call "${callId.slice(0, 60)}" names the tool "${name.slice(0, 60)}", which this agent does not have`
  }
  if (!isRecord(results)) return 'pendingTurn.results is not an object of settled calls by call id'
  for (const callId of Object.keys(results)) {
    const result = results[callId]
    if (!names.has(callId)) return `pendingTurn.results holds call "${callId.slice(0, 60)}", which the turn does not hold`
    if (
      !isRecord(result) ||
      result.callId !== callId ||
      typeof result.name !== 'string' ||
      typeof result.ok !== 'boolean' ||
      typeof result.content !== 'string' ||
      typeof result.attempts !== 'number' ||
      typeof result.replayed !== 'boolean' ||
      (result.error !== undefined && !(isRecord(result.error) && typeof result.error.code === 'string'))
    )
      return `pendingTurn.results["${callId.slice(0, 60)}"] is not a settled call of that id`
  }
  return unrecordedCall(names.keys(), results, waiting)
}

/**
 * A call of the turn the run did not record as exactly one of kept (settled, never made again) or
 * waiting (made on resume): a call planted in the list would otherwise be dispatched on replay.
 */
function unrecordedCall(callIds: Iterable<string>, results: Record<string, unknown>, waiting: ReadonlySet<string>): string | undefined {
  for (const callId of callIds) {
    const kept = Object.hasOwn(results, callId)
    if (kept && waiting.has(callId)) return `the call "${callId.slice(0, 60)}" is both kept (in results) and waiting (in pending)`
    if (!kept && !waiting.has(callId))
      return `the call "${callId.slice(0, 60)}" of pendingTurn.response.toolCalls is neither kept (in results) nor waiting (in pending); a run never checkpoints such a call`
  }
  return undefined
}

/**
 * Throws a `ResumeError('corrupt_checkpoint')` naming the run, the problem and the fix when the
 * snapshot's stopped turn cannot be replayed as it was checkpointed: a replay of a turn nobody
 * wrote could run a call nobody approved.
 */
export function checkPendingTurn(snapshot: RunSnapshot, tools: ReadonlySet<string>): void {
  if (snapshot.pendingTurn === undefined) return
  const problem = pendingTurnProblem(snapshot.pendingTurn, tools)
  if (problem === undefined) return
  throw new ResumeError(
    'corrupt_checkpoint',
    snapshot.runId,
    `agent.resume(): the checkpoint of run "${snapshot.runId}" cannot be resumed: ${problem}. Nothing ran. ` +
      'Resume it with the tools it was stopped with, or restore the checkpoint from a backup; to drop the stopped turn instead, ' +
      'save the snapshot without pendingTurn (the model is asked again)',
  )
}

/**
 * Checkpoints in memory (copied on save and load, so nobody shares mutable state with a snapshot).
 *
 * @example
 * const checkpoints = memoryCheckpoints()
 * const agent = createAgent({ model, tools, checkpoints })
 */
export function memoryCheckpoints(): CheckpointStore & { readonly size: number } {
  const snapshots = new Map<string, string>()
  return {
    name: 'memory',
    save(snapshot) {
      snapshots.set(snapshot.runId, JSON.stringify(snapshot))
    },
    load(runId) {
      const text = snapshots.get(runId)
      return text === undefined ? undefined : (JSON.parse(text) as RunSnapshot)
    },
    get size() {
      return snapshots.size
    },
  }
}

// The errors made by checkpointSaveFailed: the loop tells them from a stop by identity, not by their fields.
const saveFailures = new WeakSet<LoopError>()

/**
 * What `run()` and `resume()` reject with when a checkpoint could not be saved, naming the store
 * and the run: a run whose progress is not durable must not look as if it were (a parked run would
 * never wake), and it must not be stopped either, since the store may be back in a second. The last
 * checkpoint saved stays as it was, so `resume(runId)` (a queue's retry) continues from it.
 */
export function checkpointSaveFailed(store: CheckpointStore, runId: string, what: string, cause: unknown): LoopError {
  const name =
    typeof store.name === 'string' && store.name.length > 0 ? `checkpoints store "${store.name.slice(0, 100)}"` : 'the checkpoints store'
  const message = cause instanceof Error ? cause.message : String(cause)
  const error = new LoopError('fatal', `${name} failed to save ${what} of run "${runId}": ${message.slice(0, 500)}`, {
    cause,
    details: { runId, store: store.name ?? null, checkpoint: what },
  })
  saveFailures.add(error)
  return error
}

/** True for the error of a checkpoint that could not be saved ({@link checkpointSaveFailed}). */
export const isCheckpointSaveFailure = (err: unknown): err is LoopError => LoopError.is(err) && saveFailures.has(err)
