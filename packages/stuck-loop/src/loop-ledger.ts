import type { Json } from '@shallot/core'

/** Where the ledger lives in `run.state`. */
export const STATE_KEY = 'shallot.stuck-loop'

/** Where versions before 0.2 kept the ledger; read once and moved, so an older checkpoint keeps its counts. */
export const LEGACY_STATE_KEY = 'stuck-loop'

/** What the ledger remembers about one fingerprint. Plain JSON, so a checkpointed run resumes its counts. */
export type LoopEntry = {
  /** The tool's name, for reports and for skipping the hash when a tool has no entries. */
  tool: string
  /** Ledger tick of the last call with this fingerprint; the window evicts the smallest. */
  seen: number
  /** Identical calls in the current streak (failures, refusals and, when watched, identical successes). */
  attempts: number
  /** Failures since the last success, whatever their outcome. */
  failures: number
  /** Consecutive calls that ended with the same outcome as the last one. */
  same: number
  /** `e<hash>` for a failure (code + normalized message), `v<hash>` for a success's value, `''` for none. */
  outcome: string
  /** `code: message` of the last failure, for refusals and reports. */
  lastError: string
  lastHint: string
}

/** The per-run record under `run.state['shallot.stuck-loop']`. */
export type LoopLedger = {
  version: 1
  /** Bumped by every touch and every removal; orders entries without relying on key order, which JSON stores may not keep. */
  tick: number
  calls: { [fingerprint: string]: LoopEntry }
}

/** Why a call is refused or the run is stopped. */
export type LoopReason = 'repeated_failure' | 'flailing' | 'repeated_success'

/** What to do with a call before it runs: nothing (`undefined`), refuse it softly, or stop the run. */
export type LoopVerdict = { action: 'refuse' | 'stop'; reason: LoopReason; count: number } | undefined

export interface LoopLimits {
  refuseAfter: number
  flailAfter: number
  stopAfter: number
  successRepeatLimit?: number | undefined
  window: number
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isLedger(value: unknown): value is LoopLedger {
  return isRecord(value) && value.version === 1 && typeof value.tick === 'number' && isRecord(value.calls)
}

function isEntry(value: unknown): value is LoopEntry {
  return (
    isRecord(value) &&
    typeof value.tool === 'string' &&
    typeof value.seen === 'number' &&
    Number.isInteger(value.attempts) &&
    Number.isInteger(value.failures) &&
    Number.isInteger(value.same) &&
    typeof value.outcome === 'string' &&
    typeof value.lastError === 'string' &&
    typeof value.lastHint === 'string'
  )
}

/**
 * The run's ledger, or `undefined` when there is none yet. With `create`, a missing or
 * unreadable value (e.g. state written by another version) is replaced by an empty ledger.
 */
export function ledgerOf(state: Record<string, Json>, create: true): LoopLedger
export function ledgerOf(state: Record<string, Json>, create?: boolean): LoopLedger | undefined
export function ledgerOf(state: Record<string, Json>, create = false): LoopLedger | undefined {
  const value = state[STATE_KEY]
  if (isLedger(value)) return value
  if (value === undefined && Object.hasOwn(state, LEGACY_STATE_KEY)) {
    const legacy = state[LEGACY_STATE_KEY]
    if (isLedger(legacy)) {
      delete state[LEGACY_STATE_KEY]
      state[STATE_KEY] = legacy
      return legacy
    }
  }
  if (!create) return undefined
  const fresh: LoopLedger = { version: 1, tick: 0, calls: {} }
  state[STATE_KEY] = fresh
  return fresh
}

// Which tools have entries, per ledger, valid while the ledger's tick is unchanged: every change
// of the entry set bumps the tick, so the happy path answers without walking the entries.
const toolIndex = new WeakMap<LoopLedger, { tick: number; tools: Set<string> }>()

/** True when any entry belongs to `tool`: without one, a call of `tool` needs no fingerprint. */
export function hasTool(ledger: LoopLedger, tool: string): boolean {
  let index = toolIndex.get(ledger)
  if (index === undefined || index.tick !== ledger.tick) {
    const tools = new Set<string>()
    for (const fp in ledger.calls) {
      const name = ledger.calls[fp]?.tool
      if (typeof name === 'string') tools.add(name)
    }
    index = { tick: ledger.tick, tools }
    toolIndex.set(ledger, index)
  }
  return index.tools.has(tool)
}

/** The entry for `fp`, dropping it if it does not have the expected shape. */
export function entryOf(ledger: LoopLedger, fp: string): LoopEntry | undefined {
  if (!Object.hasOwn(ledger.calls, fp)) return undefined
  const entry = ledger.calls[fp]
  if (isEntry(entry)) return entry
  delete ledger.calls[fp]
  ledger.tick++
  return undefined
}

/** The entry for `fp`, created if needed, marked as the most recent; evicts the oldest beyond `window`. */
export function touch(ledger: LoopLedger, fp: string, tool: string, window: number): LoopEntry {
  let entry = entryOf(ledger, fp)
  if (entry === undefined) {
    entry = { tool, seen: 0, attempts: 0, failures: 0, same: 0, outcome: '', lastError: '', lastHint: '' }
    ledger.calls[fp] = entry
    const keys = Object.keys(ledger.calls)
    for (let excess = keys.length - window; excess > 0; excess--) {
      let oldest: string | undefined
      let oldestSeen = Number.POSITIVE_INFINITY
      for (const key of Object.keys(ledger.calls)) {
        const seen = ledger.calls[key]?.seen ?? Number.NEGATIVE_INFINITY
        if (key !== fp && seen < oldestSeen) {
          oldest = key
          oldestSeen = seen
        }
      }
      if (oldest !== undefined) delete ledger.calls[oldest]
    }
  }
  entry.seen = ++ledger.tick
  return entry
}

/**
 * Decides, before a call runs, whether the entry's history makes it a loop. Refusal needs a reason
 * (an identical-failure streak, flailing, or an identical-success streak); the stop comes when the
 * call would be the `stopAfter`-th identical attempt of such a streak, refusals included.
 */
export function judge(entry: LoopEntry, limits: LoopLimits): LoopVerdict {
  let reason: LoopReason | undefined
  if (entry.failures > 0) {
    if (entry.same >= limits.refuseAfter) reason = 'repeated_failure'
    else if (entry.failures >= limits.flailAfter) reason = 'flailing'
  } else if (limits.successRepeatLimit !== undefined && entry.outcome !== '' && entry.same >= limits.successRepeatLimit) {
    reason = 'repeated_success'
  }
  if (reason === undefined) return undefined
  const count = entry.attempts + 1
  return { action: count >= limits.stopAfter ? 'stop' : 'refuse', reason, count }
}

/** Records a failure with outcome key `outcome`; the first failure after a success starts a new streak. */
export function recordFailure(entry: LoopEntry, outcome: string, lastError: string, lastHint: string): void {
  if (entry.failures === 0) {
    entry.attempts = 0
    entry.same = 0
  }
  entry.attempts++
  entry.failures++
  entry.same = entry.outcome === outcome ? entry.same + 1 : 1
  entry.outcome = outcome
  entry.lastError = lastError
  entry.lastHint = lastHint
}

/**
 * Records a success. Without a value key (success repeats unwatched) the fingerprint is forgotten:
 * a success is progress. With one, an identical value extends the streak, a new value restarts it.
 */
export function recordSuccess(ledger: LoopLedger, fp: string, value: string | undefined, tool: string, window: number): void {
  if (value === undefined) {
    if (Object.hasOwn(ledger.calls, fp)) {
      delete ledger.calls[fp]
      ledger.tick++
    }
    return
  }
  const entry = touch(ledger, fp, tool, window)
  if (entry.failures === 0 && entry.outcome === value) {
    entry.attempts++
    entry.same++
    return
  }
  entry.attempts = 1
  entry.failures = 0
  entry.same = 1
  entry.outcome = value
  entry.lastError = ''
  entry.lastHint = ''
}

/**
 * Forgets repeats, e.g. before resuming a stopped run whose cause a human fixed: every entry,
 * or only those of `tool`.
 *
 * @example
 * resetStuckLoop(checkpoint.state, { tool: 'read_file' })
 */
export function resetStuckLoop(state: Record<string, Json>, options: { tool?: string } = {}): void {
  const ledger = ledgerOf(state)
  if (ledger === undefined) return
  ledger.tick++
  if (options.tool === undefined) {
    ledger.calls = {}
    return
  }
  for (const fp of Object.keys(ledger.calls)) {
    if (ledger.calls[fp]?.tool === options.tool) delete ledger.calls[fp]
  }
}
