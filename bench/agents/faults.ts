/**
 * The fault vocabulary and the seeded schedule. A schedule says, for each tool, what its k-th
 * request gets, and for the model, what its k-th request gets, so every contender meets the same
 * failures at the same places, however many requests it sends.
 */

/** What can happen to a request that reaches a tool. */
export type ToolFault =
  | 'transient_503' // 503 with Retry-After: 2; nothing happened
  | 'rate_limited_429' // 429 with Retry-After: 5; nothing happened
  | 'reset' // the connection is reset before the upstream did anything
  | 'hang' // a read whose upstream never answers (the client has no timeout)
  | 'write_timeout_after_effect' // the write landed, then the client's 30 s timeout fired
  | 'write_reset_after_effect' // the write landed, then the connection was reset
  | 'write_refused' // connection refused: the write never started

/**
 * What can happen to a request that reaches the model. `model_503_30s` starts an outage: that request and every
 * one in the 30 s after it answer 503 (no Retry-After). `model_429_ra120` answers 429 with Retry-After: 120.
 */
export type ModelFault = 'malformed_json' | 'model_429' | 'model_503' | 'model_503_30s' | 'model_429_ra120'

/** A whole upstream down for the episode; the task's mirror still answers. */
export type EpisodeFault = 'dead_upstream'

/**
 * A fault repeated on consecutive requests: three model requests in a row answer 429 with Retry-After: 1 (a
 * minute-boundary rate limit), or a write's first two requests land and then time out.
 */
export type RunFault = 'model_429_x3' | 'write_timeout_after_effect_x2'

export type FaultKind = ToolFault | ModelFault | EpisodeFault | RunFault

export const READ_FAULTS: readonly ToolFault[] = ['transient_503', 'rate_limited_429', 'reset', 'hang']
export const WRITE_FAULTS: readonly ToolFault[] = [
  'transient_503',
  'rate_limited_429',
  'reset',
  'write_timeout_after_effect',
  'write_reset_after_effect',
  'write_refused',
]
/** The model faults of the mixed schedule: one request each. The outages are matrix rows of their own. */
export const MODEL_FAULTS: readonly ModelFault[] = ['malformed_json', 'model_429', 'model_503']
/** Model faults that last: a matrix row each, never in the mixed schedule (whose figures stay comparable). */
export const MODEL_OUTAGES: readonly FaultKind[] = ['model_429_x3', 'model_503_30s', 'model_429_ra120']
export const ALL_FAULTS: readonly FaultKind[] = [
  'transient_503',
  'rate_limited_429',
  'reset',
  'hang',
  'write_timeout_after_effect',
  'write_reset_after_effect',
  'write_refused',
  'dead_upstream',
  'malformed_json',
  'model_429',
  'model_503',
  'model_429_x3',
  'model_503_30s',
  'model_429_ra120',
  'write_timeout_after_effect_x2',
]

export interface FaultSchedule {
  /** tool name → fault of its k-th request (index k-1); absent: no fault. */
  readonly tools: Readonly<Record<string, ReadonlyArray<ToolFault | undefined>>>
  readonly model: ReadonlyArray<ModelFault | undefined>
  /** Tools whose upstream is down for the whole episode. */
  readonly dead: readonly string[]
}

/** mulberry32: small, fast, and the same sequence on every machine. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function hashSeed(...parts: Array<string | number>): number {
  let h = 2166136261
  for (const char of parts.join('|')) h = Math.imul(h ^ char.charCodeAt(0), 16777619)
  return h >>> 0
}

const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)] as T

export interface ScheduleTools {
  readonly reads: readonly string[]
  readonly writes: readonly string[]
  /** Primary tools that have a mirror. */
  readonly mirrored: readonly string[]
}

const SLOTS = 8

/**
 * The mixed schedule: each of the first requests of each tool fails with probability `toolRate`,
 * each model request with `modelRate`, and a mirrored upstream is dead with `deadRate`.
 */
export function mixedSchedule(
  seed: number,
  tools: ScheduleTools,
  rates = { toolRate: 0.1, modelRate: 0.05, deadRate: 0.1 },
): FaultSchedule {
  const random = seeded(seed)
  const slots = (faults: readonly ToolFault[]) =>
    Array.from({ length: SLOTS }, () => (random() < rates.toolRate ? pick(random, faults) : undefined))
  const schedule: Record<string, Array<ToolFault | undefined>> = {}
  for (const name of tools.reads) schedule[name] = slots(READ_FAULTS)
  for (const name of tools.writes) schedule[name] = slots(WRITE_FAULTS)
  const model = Array.from({ length: SLOTS * 2 }, () => (random() < rates.modelRate ? pick(random, MODEL_FAULTS) : undefined))
  const dead = tools.mirrored.filter(() => random() < rates.deadRate)
  return { tools: schedule, model, dead }
}

/**
 * One fault kind, once: it hits the first request of the first tool it applies to (for a model
 * fault, the model request `1 + seed % 3`; a repeated fault, that many requests in a row from there).
 * `undefined` when the kind does not apply to the task.
 */
export function singleFaultSchedule(kind: FaultKind, seed: number, tools: ScheduleTools): FaultSchedule | undefined {
  if (kind === 'dead_upstream')
    return tools.mirrored.length === 0 ? undefined : { tools: {}, model: [], dead: [tools.mirrored[0] as string] }
  if (kind === 'write_timeout_after_effect_x2') {
    const write = tools.writes[0]
    return write === undefined
      ? undefined
      : { tools: { [write]: ['write_timeout_after_effect', 'write_timeout_after_effect'] }, model: [], dead: [] }
  }
  if (kind === 'model_429_x3' || (MODEL_FAULTS as readonly string[]).includes(kind) || MODEL_OUTAGES.includes(kind)) {
    const model: Array<ModelFault | undefined> = []
    const times = kind === 'model_429_x3' ? 3 : 1
    for (let i = 0; i < times; i++) model[(seed % 3) + i] = kind === 'model_429_x3' ? 'model_429' : (kind as ModelFault)
    return { tools: {}, model, dead: [] }
  }
  const fault = kind as ToolFault
  const target =
    WRITE_FAULTS.includes(fault) && !READ_FAULTS.includes(fault)
      ? tools.writes[0]
      : READ_FAULTS.includes(fault) && !WRITE_FAULTS.includes(fault)
        ? tools.reads[0]
        : ((seed % 2 === 0 ? tools.writes[0] : tools.reads[0]) ?? tools.writes[0])
  if (target === undefined) return undefined
  return { tools: { [target]: [fault] }, model: [], dead: [] }
}
