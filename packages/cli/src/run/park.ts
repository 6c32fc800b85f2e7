import type { ParkedOutcome, ParkReason } from '@shallot/agent'
import type { Clock } from '@shallot/core'
import type { DefaultModelMiddlewareOptions } from 'shallot'
import { UsageError } from '../usage.js'

/** The longest park: core's default `park.maxWaitMs`, one day. */
const MAX_PARK_MS = 86_400_000

/**
 * The exit code of a parked run (and of a resume that came before its time): sysexits' EX_TEMPFAIL,
 * "try again later", so a script or a cron job can tell it from a stop (1) and bad usage (2).
 */
export const EXIT_PARKED = 75

/** What `createAgent({ park })` gets from `--park-after`. */
export interface CliPark {
  readonly afterMs: number
  /** The wall clock; from the injected clock when the run has one (tests), else the agent's default (`Date.now`). */
  readonly wallNow?: () => number
}

/**
 * `--park-after MS`: a tool call that must wait at least MS (an open circuit's cooldown, a long
 * `Retry-After`) parks the run in its checkpoint instead of holding the process. Needs
 * `--checkpoints`: a parked run lives only there. With an injected clock, the wall clock moves with it.
 */
export function parkOf(value: string | undefined, checkpoints: string | undefined, clock: Clock | undefined): CliPark | undefined {
  if (value === undefined) return undefined
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1 || Number(value) > MAX_PARK_MS)
    throw new UsageError(
      `--park-after takes milliseconds from 1 to ${MAX_PARK_MS} (one day), e.g. --park-after 10000; not "${value.slice(0, 40)}"`,
    )
  if (checkpoints === undefined)
    throw new UsageError('--park-after needs --checkpoints FILE.db: a parked run lives in its checkpoint until shallot resume wakes it')
  const afterMs = Number(value)
  if (clock === undefined) return { afterMs }
  const wallStart = Date.now()
  const clockStart = clock.now()
  return { afterMs, wallNow: () => wallStart + (clock.now() - clockStart) }
}

/**
 * The default model stack's options under `--park-after MS`: the model retry waits out a `Retry-After`
 * shorter than MS in this process and gives a longer one back at once, so the run parks on it.
 */
export function parkingModelStack(park: CliPark | undefined): DefaultModelMiddlewareOptions {
  return park === undefined ? {} : { retry: { maxRetryAfterMs: park.afterMs - 1 } }
}

const secondsOf = (ms: number) => `${Math.max(0, Math.ceil(ms / 1000))} s`

/** What waits, in words: the tool (and its call, unless `call` is false), or the model. */
export function waiterOf(reason: ParkReason, call = true): string {
  if ('model' in reason) return `the model ${reason.model}`
  return call ? `${reason.tool} (call ${reason.callId})` : reason.tool
}

/** What the parked run waits on, in one line: the call and its tool, or the model; its code and the wait. */
export function parkedWhy(outcome: ParkedOutcome): string {
  const { reason } = outcome
  const again = 'model' in reason ? 'asked' : 'called'
  return `${waiterOf(reason)} answered ${reason.code}: it may be ${again} again after ${secondsOf(reason.waitMs)}`
}

/**
 * The lines `run` and `resume` print for a parked outcome: when it may go on, and the command that
 * continues it (nothing runs it for you: a cron job, `at`, a queue or a person).
 */
export function parkedLines(outcome: ParkedOutcome, resume: string, nowMs: number): string[] {
  const at = new Date(outcome.wakeAt).toISOString()
  return [
    `parked until ${at} (in ${secondsOf(outcome.wakeAt - nowMs)}): ${parkedWhy(outcome)}`,
    `  nothing runs until you resume it at or after ${at}; the calls already done are kept, ${'model' in outcome.reason ? 'and the model is asked again' : 'the waiting one runs again'}`,
    `  resume: ${resume}`,
  ]
}
