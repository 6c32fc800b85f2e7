import type { LoopError, Message } from '@shallot/core'
import type { ParkReason } from './checkpoints.js'
import type { RunReport } from './report.js'
import type { RunUsage } from './usage-budget.js'

export type RunOutcome =
  | {
      readonly status: 'completed'
      readonly runId: string
      readonly output: string
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
      /** Tokens and dollars the run's model calls spent, resumed runs included. */
      readonly usage: RunUsage
    }
  | {
      readonly status: 'stopped'
      readonly runId: string
      readonly error: LoopError
      readonly report: RunReport
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
      readonly usage: RunUsage
    }

/** A run checkpointed to continue at `wakeAt` (wall-clock epoch ms) with `agent.resume(runId)`; the worker is free. */
export interface ParkedOutcome {
  readonly status: 'parked'
  readonly runId: string
  readonly wakeAt: number
  readonly reason: ParkReason
  /** Completed turns; the parked one is not among them until it completes. */
  readonly turns: number
  readonly steps: number
  readonly transcript: readonly Message[]
  readonly usage: RunUsage
}

/** What an agent created with `park` answers: a {@link RunOutcome}, or a {@link ParkedOutcome}. */
export type ParkingOutcome = RunOutcome | ParkedOutcome
