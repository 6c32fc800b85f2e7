import { LoopError, type ToolErrorJSON } from './errors.js'
import type { Message } from './model.js'
import type { Json, ToolCall } from './types.js'
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

/** Why a run parked: the soft error of the call that must wait before it can be tried again. */
export interface ParkReason {
  /** The soft error's code, e.g. `rate_limited` (a long `Retry-After`) or `circuit_open` (a cooldown). */
  readonly code: string
  readonly tool: string
  readonly callId: string
  /** How long the error said to wait, in ms. */
  readonly waitMs: number
}

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
  /** `parked`: checkpointed to continue at `parked.wakeAt`, its waiting turn in `pendingTurn`. */
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
}

/** Where snapshots go: one per run id, replaced after every completed turn. */
export interface CheckpointStore {
  /** Names the store in errors ("checkpoints store \"postgres\" failed to save …"); optional. */
  readonly name?: string
  save(snapshot: RunSnapshot): void | Promise<void>
  load(runId: string): RunSnapshot | undefined | Promise<RunSnapshot | undefined>
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

/**
 * The hard stop for a checkpoint that could not be saved, naming the store and the run: a run
 * whose progress is not durable must not look as if it were (a parked run would never wake).
 */
export function checkpointSaveFailed(store: CheckpointStore, runId: string, what: string, cause: unknown): LoopError {
  const name =
    typeof store.name === 'string' && store.name.length > 0 ? `checkpoints store "${store.name.slice(0, 100)}"` : 'the checkpoints store'
  const message = cause instanceof Error ? cause.message : String(cause)
  return new LoopError('fatal', `${name} failed to save ${what} of run "${runId}": ${message.slice(0, 500)}`, {
    cause,
    details: { runId, store: store.name ?? null, checkpoint: what },
  })
}
