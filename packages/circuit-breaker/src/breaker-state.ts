import type { Json } from '@shallot/core'
import type { FailurePolicy } from './failure-policy.js'

/** Where a circuit is: `closed` lets calls through, `open` refuses them, `half-open` lets probes through. */
export type Circuit = 'closed' | 'open' | 'half-open'

/**
 * One breaker's whole state, as plain JSON so a run-scoped breaker checkpoints it and a shared
 * store can serialize it. Times are `clock.now()` values of the monotonic clock.
 */
export type BreakerState = {
  circuit: Circuit
  /** Bumped each time the circuit opens: a call admitted under an older generation decides nothing. */
  generation: number
  /**
   * The policy's counts while closed. While half-open and waiting for more than one successful
   * probe (`halfOpenSuccesses`), the trial's tally `{ probeSuccesses }` instead: kept in this field
   * so every store that round-trips the state keeps it, and states written before it read as before.
   */
  counts: Json
  /** Failures behind the current opening: the N in "open after N failures". */
  failures: number
  /** When the circuit last opened, and for how long it stays open. */
  openedAt: number
  openMs: number
  /** Openings since the circuit last closed; drives cooldown growth. */
  opens: number
  /** Probes holding a half-open slot: `[probeId, startedAt]`. */
  probes: [number, number][]
  /** The last probe id handed out. */
  seq: number
}

const CIRCUITS: readonly string[] = ['closed', 'open', 'half-open']
const isCount = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 0
const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n)

/** The half-open trial's tally, as it sits in `counts`. */
export type Tally = { probeSuccesses: number }
export const isTally = (v: Json | undefined): v is Tally =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 && isCount(v.probeSuccesses)

/** True when `value` (read back from a checkpoint or a shared store) is a state a breaker of `policy` can use. */
export function isStateOf(policy: FailurePolicy, value: Json | undefined): value is BreakerState {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const s = value as Record<string, Json | undefined>
  return (
    CIRCUITS.includes(s.circuit as string) &&
    isCount(s.generation) &&
    s.counts !== undefined &&
    (policy.isCounts(s.counts) || (s.circuit === 'half-open' && isTally(s.counts))) &&
    isCount(s.failures) &&
    isTime(s.openedAt) &&
    isTime(s.openMs) &&
    (s.openMs as number) >= 0 &&
    isCount(s.opens) &&
    isCount(s.seq) &&
    Array.isArray(s.probes) &&
    s.probes.every((p) => Array.isArray(p) && p.length === 2 && isCount(p[0]) && isTime(p[1]))
  )
}
