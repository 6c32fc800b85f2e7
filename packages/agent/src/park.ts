import { type AnyTool, LoopError, ToolError, type ToolErrorJSON, type ToolResult } from '@shallot/core'
import { waitMsOf } from '@shallot/core/kit'
import type { ParkReason, ParkRecord, RunSnapshot, SettledCall } from './checkpoints.js'

/** What `createAgent({ park })` runs with, checked and defaulted. */
export interface ParkSettings {
  /** A wait at least this long parks the run instead of holding the worker. */
  readonly afterMs: number
  /** The longest a run parks; a longer wait goes to the model as the soft error it is. */
  readonly maxWaitMs: number
  /** Wall-clock epoch ms: `wakeAt` is compared by whichever process resumes the run. */
  readonly wallNow: () => number
}

/** The longest wait a parked run may name unless `park.maxWaitMs` says otherwise: one day. */
export const DEFAULT_MAX_PARK_MS = 86_400_000

/**
 * How long a settled call must wait before it is worth making again, when that wait parks the run:
 * a failure's `retryAfterMs` of at least `afterMs` (and at most `maxWaitMs`), on an error that heals
 * by itself (`transient`), for a call that may be made again (a read, an idempotent tool, or an
 * error proving nothing reached the world). Undefined for every other result.
 */
function parkingWait(result: ToolResult, tools: ReadonlyMap<string, AnyTool>, park: ParkLimits): number | undefined {
  const error = result.error
  const waitMs = error?.retryAfterMs
  if (result.ok || error === undefined || waitMs === undefined || error.category !== 'transient') return undefined
  if (waitMs < park.afterMs || waitMs > park.maxWaitMs) return undefined
  const effect = tools.get(result.name)?.effect ?? 'write'
  return effect === 'write' && error.safeToRepeat !== true ? undefined : waitMs
}

type ParkLimits = Pick<ParkSettings, 'afterMs' | 'maxWaitMs'>

/**
 * The wait that parks a settled turn, or undefined: the longest {@link parkingWait} of its calls.
 * Only a whole settled turn is looked at, so no call is in flight.
 */
export function longestWait(results: readonly ToolResult[], tools: ReadonlyMap<string, AnyTool>, park: ParkLimits): ParkReason | undefined {
  let longest: ParkReason | undefined
  for (const result of results) {
    const waitMs = parkingWait(result, tools, park)
    if (waitMs === undefined || (longest !== undefined && waitMs <= longest.waitMs)) continue
    longest = { code: (result.error as ToolErrorJSON).code, tool: result.name, callId: result.callId, waitMs }
  }
  return longest
}

/**
 * The settled calls of a parked turn that are kept: every call but the ones that park. A call that
 * failed otherwise (a write that may have reached the world included) keeps its result and is
 * never made again on wake.
 */
export function keptBesideWaits(
  results: readonly ToolResult[],
  tools: ReadonlyMap<string, AnyTool>,
  park: ParkLimits,
  settledCall: (result: ToolResult) => SettledCall,
): Record<string, SettledCall> {
  const kept: Record<string, SettledCall> = {}
  for (const result of results) {
    if (parkingWait(result, tools, park) !== undefined) continue
    // A call id is the model's text: `__proto__` must be a key like any other.
    Object.defineProperty(kept, result.callId, { value: settledCall(result), enumerable: true, writable: true, configurable: true })
  }
  return kept
}

/** The park record of a wait that starts now, on the park's wall clock. */
export function parkRecord(park: ParkSettings, reason: ParkReason): ParkRecord {
  const parkedAt = park.wallNow()
  return { wakeAt: Math.ceil(parkedAt + reason.waitMs), parkedAt, reason }
}

/**
 * The park of a run whose model call ended it (`model_failed`) on a transient error asking to wait `afterMs` to
 * `maxWaitMs` (a long `Retry-After`, a rate limit's or pushback's refusal, an open circuit), or undefined.
 * A model call changes nothing in the world, so it is always safe to make again on wake.
 */
export function modelPark(err: unknown, park: ParkSettings): ParkRecord | undefined {
  if (!LoopError.is(err) || err.kind !== 'model_failed' || !ToolError.is(err.cause) || err.cause.category !== 'transient') return undefined
  const waitMs = waitMsOf(err.cause.retryAfterMs)
  if (waitMs === undefined || waitMs < park.afterMs || waitMs > park.maxWaitMs) return undefined
  return parkRecord(park, { code: err.cause.code, model: String(err.details.model ?? 'model'), waitMs })
}

const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value > 0

/**
 * The park record of a parked snapshot, checked against `now` (wall-clock ms): a wake time that is
 * not a finite time, comes before the park, or lies further ahead than `maxWaitMs` (a corrupt row,
 * or a clock far off) is refused with a TypeError naming the run and the value, never waited for.
 */
export function parkRecordOf(snapshot: RunSnapshot, now: number, maxWaitMs: number): ParkRecord {
  const { runId, parked } = snapshot
  const corrupt = (problem: string) =>
    new TypeError(
      `agent.resume(): the checkpoint of run "${runId}" is parked with a corrupt park record (${problem}); ` +
        'the run is not resumed: inspect the checkpoint and what the run already did before starting it again',
    )
  if (typeof parked !== 'object' || parked === null) throw corrupt('no park record')
  const { wakeAt, parkedAt, reason } = parked as Partial<Record<keyof ParkRecord, unknown>>
  if (!isTime(wakeAt)) throw corrupt(`wakeAt is ${JSON.stringify(wakeAt) ?? String(wakeAt)}, not a wall-clock time in ms`)
  if (!isTime(parkedAt)) throw corrupt(`parkedAt is ${JSON.stringify(parkedAt) ?? String(parkedAt)}, not a wall-clock time in ms`)
  if (wakeAt < parkedAt) throw corrupt(`wakeAt ${new Date(wakeAt).toISOString()} is before it parked`)
  if (wakeAt - parkedAt > maxWaitMs || wakeAt - now > maxWaitMs) {
    throw corrupt(`wakeAt ${new Date(wakeAt).toISOString()} is further ahead than park.maxWaitMs (${maxWaitMs} ms)`)
  }
  const r = reason as Partial<Record<'code' | 'tool' | 'callId' | 'model' | 'waitMs', unknown>> | null | undefined
  // A tool call waits in its parked turn (pendingTurn); the model call waits with no turn begun.
  const byTool = typeof r?.tool === 'string' && typeof r.callId === 'string'
  if (typeof r !== 'object' || r === null || typeof r.code !== 'string' || !(byTool || typeof r.model === 'string'))
    throw corrupt('reason is neither { code, tool, callId, waitMs } nor { code, model, waitMs }')
  if (typeof r.waitMs !== 'number' || !Number.isFinite(r.waitMs) || r.waitMs < 0) throw corrupt('reason.waitMs is not a finite wait')
  if (byTool !== (snapshot.pendingTurn !== undefined))
    throw corrupt(byTool ? 'the waiting turn (pendingTurn) is missing' : 'a run parked before its model call holds a pending turn')
  const { code, tool, callId, model, waitMs } = r
  return { wakeAt, parkedAt, reason: (byTool ? { code, tool, callId, waitMs } : { code, model, waitMs }) as ParkReason }
}

const PARKED_ERROR = Symbol.for('shallot.ParkedError')

/**
 * `agent.resume(runId)` of a parked run before its `wakeAt`, on an agent created without `park`
 * (one with `park` answers the `parked` outcome instead): names the run and when it may go on.
 *
 * @example
 * try { await agent.resume('trip') } catch (err) { if (ParkedError.is(err)) schedule(err.runId, err.wakeAt) }
 */
export class ParkedError extends TypeError {
  override readonly name = 'ParkedError'
  readonly code = 'run_parked'
  readonly runId: string
  /** Wall-clock epoch ms. */
  readonly wakeAt: number
  readonly [PARKED_ERROR] = true

  constructor(runId: string, wakeAt: number, restMs: number) {
    super(
      `agent.resume(): run "${runId}" is parked until ${new Date(wakeAt).toISOString()} (${Math.ceil(restMs)} ms from now); ` +
        'resume it then, or create the agent with { park } so an early resume answers the parked outcome',
    )
    this.runId = runId
    this.wakeAt = wakeAt
  }

  /** True for a ParkedError from any installed copy of core. */
  static is(value: unknown): value is ParkedError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PARKED_ERROR] === true
  }
}
